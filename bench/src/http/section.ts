/**
 * HTTP throughput and p99 latency: autocannon (in this process) against a minimal app in a
 * separate server process per subject. Every server is started first and given the same warm-up;
 * then rounds interleave the subjects (each round starts one subject later, so no subject is always
 * measured first), and the report gives medians and ratios to the bare app of the same framework.
 */
import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { startRedis } from '../lib/redis-server.js';
import { formatRate, formatRatio, median } from '../lib/stats.js';
import { type Section, table, type Verdict } from '../report/markdown.js';
import type { Chart } from '../report/svg.js';
import { CONNECTIONS, load, PIPELINING, type Round } from './load.js';
import { type ServerProcess, startServer } from './server-process.js';
import {
  ALL_HTTP_SUBJECTS,
  bareOf,
  type HttpSubject,
  httpSubject as httpSubjectOf,
  isReference,
  LIMIT,
  usesRedis,
  WINDOW_MS,
} from './subjects.js';

export interface HttpRow {
  readonly id: string;
  readonly label: string;
  readonly rounds: readonly Round[];
  /** Medians over the rounds. */
  readonly rps: number;
  readonly p99: number;
  readonly mean: number;
  readonly serverCpu: number;
  readonly loadCpu: number;
  readonly cpuPerRequest: number;
  readonly redisCpuPerRequest: number;
  /** Throughput ÷ the bare app's, measured right beside it; median over the pairs. */
  readonly ratioToBare: number;
  /** The bare app's server CPU per request ÷ this one's (per pair, median): the throughput ratio of a CPU-bound server. */
  readonly cpuRatioToBare: number;
  /** Non-2xx, socket errors, timeouts, store errors over warm-up and rounds: a row with any is invalid. */
  readonly failures: number;
  readonly storeErrors: number;
  /** Rate-limit headers of one response, as the subject sends them by default. */
  readonly headers: Readonly<Record<string, string>>;
}

export interface HttpResult {
  readonly markdown: string;
  readonly configs: string;
  readonly charts: readonly Chart[];
  readonly verdicts: readonly Verdict[];
  readonly settings: HttpSettings;
  readonly rows: readonly HttpRow[];
}

/** Targets of issues #4 and #6 (reported, not enforced). */
const TARGETS = { fastify: 0.95, express: 0.97 } as const;
const PEER_NAMES = { fastify: '@fastify/rate-limit', express: 'express-rate-limit' } as const;

/** The rate-limit headers of one response: proof that each subject sends its default headers. */
async function headersOf(port: number): Promise<Record<string, string>> {
  const response = await fetch(`http://127.0.0.1:${port}/`);
  await response.arrayBuffer();
  const out: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (/ratelimit|retry-after/i.test(name)) out[name] = value;
  });
  return out;
}

export interface HttpSettings {
  /** Only these subject ids (`--http-subjects=`); all when undefined. */
  readonly subjects?: readonly string[];
  /** Length of a measured round, s. */
  readonly seconds: number;
  readonly rounds: number;
  /** Load every server gets before the rounds, s. */
  readonly warmupSeconds: number;
  /** Also measure the subjects that only give scale (node:http ceiling, no-op floors). */
  readonly references: boolean;
}

/** redis-server's CPU time so far (`INFO cpu`, user + system), µs. */
async function redisCpuMicros(client: Redis): Promise<number> {
  const info = await client.info('cpu');
  const field = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? Number.NaN);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
}

export async function http(
  settings: HttpSettings,
  log: (line: string) => void,
): Promise<Section<HttpResult>> {
  const haveRedis = spawnSync('redis-server', ['--version']).error === undefined;
  if (!haveRedis) log('  redis-server is not installed: Redis rows skipped');
  const subjects = ALL_HTTP_SUBJECTS.filter(
    (s) =>
      (haveRedis || !usesRedis(s)) &&
      (settings.references || !isReference(s)) &&
      (settings.subjects === undefined || settings.subjects.includes(s.id)),
  );
  const redis = haveRedis ? await startRedis() : undefined;
  const probe = redis === undefined ? undefined : new Redis({ host: '127.0.0.1', port: redis.port });
  const redisCpu = (s: HttpSubject) =>
    usesRedis(s) && probe !== undefined ? () => redisCpuMicros(probe) : undefined;
  const servers = new Map<string, ServerProcess>();
  const failures = new Map<string, number>(subjects.map((s) => [s.id, 0]));
  const rounds = new Map<string, Round[]>(subjects.map((s) => [s.id, []]));
  /** Per subject, its measurements each paired with the bare app's measured next to it. */
  const pairs = new Map<string, { x: Round; bare: Round }[]>(subjects.map((s) => [s.id, []]));
  const headers = new Map<string, Record<string, string>>();
  const storeErrors = new Map<string, number>();
  const phase = (name: string, since: number) =>
    log(`  ${name} in ${((performance.now() - since) / 1000).toFixed(1)} s`);
  let t = performance.now();
  try {
    // Two at a time (one per core): startup is mostly loading modules.
    for (let i = 0; i < subjects.length; i += 2) {
      const pair = subjects.slice(i, i + 2);
      const started = await Promise.allSettled(pair.map((s) => startServer(s.id, redis?.port)));
      // Keep every server that started, so `finally` stops it even when its pair failed.
      for (const [j, outcome] of started.entries())
        if (outcome.status === 'fulfilled') servers.set(pair[j]!.id, outcome.value);
      for (const outcome of started) if (outcome.status === 'rejected') throw outcome.reason;
    }
    for (const s of subjects) headers.set(s.id, await headersOf(servers.get(s.id)!.port));
    phase(`${subjects.length} servers started`, t);
    t = performance.now();
    for (const s of subjects) {
      const warm = await load(servers.get(s.id)!, settings.warmupSeconds);
      failures.set(s.id, failures.get(s.id)! + warm.failures);
    }
    phase('warm-up', t);
    t = performance.now();
    const measure = async (s: HttpSubject) => {
      const round = await load(servers.get(s.id)!, settings.seconds, redisCpu(s));
      rounds.get(s.id)!.push(round);
      failures.set(s.id, failures.get(s.id)! + round.failures);
      return round;
    };
    // Each subject is measured right next to its bare app (bare first in even rounds, last in odd
    // ones), so a ratio compares two measurements one round-length apart: the machine's other load
    // changes over seconds, and a ratio of far-apart measurements would mostly measure that.
    for (let r = 0; r < settings.rounds; r++) {
      for (let i = 0; i < subjects.length; i++) {
        const s = subjects[(i + r) % subjects.length]!;
        const bare = subjects.find((b) => b.id === bareOf(s))!;
        if (bare === s) {
          if (!subjects.some((o) => o !== s && bareOf(o) === s.id)) await measure(s); // no pairs: the ceiling
          continue;
        }
        const [first, second] = r % 2 === 0 ? [bare, s] : [s, bare];
        const a = await measure(first);
        const b = await measure(second);
        pairs.get(s.id)!.push(first === bare ? { x: b, bare: a } : { x: a, bare: b });
      }
    }
    phase('rounds', t);
    t = performance.now();
  } finally {
    for (const [id, server] of servers) storeErrors.set(id, (await server.stop()).storeErrors);
    probe?.disconnect();
    await redis?.stop();
  }
  phase('servers stopped', t);

  const rows: HttpRow[] = subjects.map((s) => {
    const list = rounds.get(s.id)!;
    return {
      id: s.id,
      label: s.label,
      rounds: list,
      rps: median(list.map((x) => x.rps)),
      p99: median(list.map((x) => x.p99)),
      mean: median(list.map((x) => x.mean)),
      serverCpu: median(list.map((x) => x.serverCpu)),
      loadCpu: median(list.map((x) => x.loadCpu)),
      cpuPerRequest: median(list.map((x) => x.cpuPerRequest)),
      redisCpuPerRequest: median(list.map((x) => x.redisCpuPerRequest)),
      ratioToBare: Number.NaN,
      cpuRatioToBare: Number.NaN,
      failures: failures.get(s.id)! + (storeErrors.get(s.id) ?? 0),
      storeErrors: storeErrors.get(s.id) ?? 0,
      headers: headers.get(s.id) ?? {},
    };
  });
  const withRatios = rows.map((r) => {
    const list = pairs.get(r.id)!;
    if (list.length === 0)
      return r.id === bareOf(httpSubjectOf(r.id)) ? { ...r, ratioToBare: 1, cpuRatioToBare: 1 } : r;
    return {
      ...r,
      ratioToBare: median(list.map((p) => p.x.rps / p.bare.rps)),
      cpuRatioToBare: median(list.map((p) => p.bare.cpuPerRequest / p.x.cpuPerRequest)),
    };
  });
  for (const r of withRatios)
    log(
      `  ${r.label}: ${formatRate(r.rps)} req/s (${formatRatio(r.ratioToBare)} bare), p99 ${r.p99} ms, ${r.cpuPerRequest.toFixed(1)} µs CPU/req (${formatRatio(r.cpuRatioToBare)})${r.failures > 0 ? `, INVALID: ${r.failures} failures` : ''}`,
    );
  return { status: 'measured', result: report(settings, subjects, withRatios) };
}

function report(
  settings: HttpResult['settings'],
  subjects: readonly HttpSubject[],
  rows: readonly HttpRow[],
): HttpResult {
  const row = (id: string) => rows.find((r) => r.id === id);
  const valid = (r: HttpRow | undefined): r is HttpRow => r !== undefined && r.failures === 0;
  const percent = (x: number) => `${Math.round(x * 100)}%`;
  const verdicts: Verdict[] = [];
  const sluiceVsPeer: string[] = [];
  for (const framework of ['fastify', 'express'] as const) {
    const sluice = row(`${framework}:sluice:memory`);
    verdicts.push({
      target: `HTTP: ${framework === 'fastify' ? 'Fastify' : 'Express'} + sluice ≥ ${TARGETS[framework]}× bare (memory store)`,
      met: valid(sluice) ? sluice.ratioToBare >= TARGETS[framework] : undefined,
      figure: valid(sluice)
        ? `${formatRatio(sluice.ratioToBare)}, CPU ${formatRatio(sluice.cpuRatioToBare)} (${PEER_NAMES[framework]}: ${formatRatio(row(`${framework}:peer:memory`)?.ratioToBare ?? Number.NaN)}, CPU ${formatRatio(row(`${framework}:peer:memory`)?.cpuRatioToBare ?? Number.NaN)})`
        : 'invalid or not measured',
    });
    for (const store of ['memory', 'redis'] as const) {
      const ours = row(`${framework}:sluice:${store}`);
      const peer = row(`${framework}:peer:${store}`);
      if (!valid(ours) || !valid(peer)) continue;
      sluiceVsPeer.push(
        `${framework === 'fastify' ? 'Fastify' : 'Express'}, ${store}: sluice ÷ ${PEER_NAMES[framework]} = ${formatRatio(ours.ratioToBare / peer.ratioToBare)}`,
      );
      if (store === 'redis')
        verdicts.push({
          target: `HTTP: ${framework === 'fastify' ? 'Fastify' : 'Express'} + sluice ahead of ${PEER_NAMES[framework]} (Redis)`,
          // Each against the bare app measured beside it: absolute req/s of rounds far apart would compare the machine's load.
          met: ours.ratioToBare > peer.ratioToBare,
          figure: `${formatRatio(ours.ratioToBare)} vs ${formatRatio(peer.ratioToBare)} of bare (CPU: ${formatRatio(ours.cpuRatioToBare)} vs ${formatRatio(peer.cpuRatioToBare)})`,
        });
    }
  }

  const cells = (r: HttpRow) => [
    r.id.includes(':sluice') ? `**${r.label}**` : r.label,
    r.failures > 0 ? `invalid: ${r.failures} failures` : formatRate(r.rps),
    formatRatio(r.ratioToBare),
    `${r.p99}`,
    r.cpuPerRequest.toFixed(1),
    formatRatio(r.cpuRatioToBare),
    Number.isFinite(r.redisCpuPerRequest) ? r.redisCpuPerRequest.toFixed(1) : '',
    percent(r.serverCpu),
    percent(r.loadCpu),
  ];
  const markdown = [
    `autocannon ${CONNECTIONS} connections, pipelining ${PIPELINING}, against one GET route answering a small JSON, each app in its own server process (the load generator runs in the bench process). Every server got the same warm-up, ${settings.warmupSeconds} s of the same load; then ${settings.rounds} interleaved round${settings.rounds === 1 ? '' : 's'} (each starting one subject later) in which every subject is measured for ${settings.seconds} s right next to the bare app of its framework (bare first in even rounds, second in odd ones); medians. Ratios are per pair, median over the pairs: the machine's other load moves over seconds, so only measurements taken side by side compare. The bare app's process serves load beside every subject, so it has run far longer than the others: the no-op floor rows (full runs) show what that alone is worth and should read about 1.00×; where they do not, read a limiter's row against its floor's. Each server is one process: differences of a few percent are within what separate processes of the same app show here. Limit ${LIMIT.toLocaleString('en')} per ${WINDOW_MS / 1000} s fixed window per client IP, so nothing is refused (a row with any non-2xx response, socket error or store error is marked invalid). "server µs/req" is the server process's CPU time per response and "× bare (CPU)" the bare app's figure divided by it: the throughput ratio a CPU-bound server would show. "redis µs/req" is redis-server's CPU time per response (\`INFO cpu\`): on this machine Redis competes for the same 2 cores. "server CPU" and "load CPU" are the shares of one core the server and the load generator used: on 2 cores they (and redis-server, and anything else running) compete, so the req/s ratios are diluted towards 1 when the generator, not the server, is the bottleneck, and move with the machine's other load.`,
    '',
    table(
      [
        'subject',
        'req/s',
        '× bare',
        'p99 ms',
        'server µs/req',
        '× bare (CPU)',
        'redis µs/req',
        'server CPU',
        'load CPU',
      ],
      rows.map(cells),
    ),
    '',
    sluiceVsPeer.length > 0 ? `Head to head (× bare ÷ × bare): ${sluiceVsPeer.join('; ')}.` : '',
  ].join('\n');
  const configs = [
    `HTTP subjects (same limit, window and key everywhere; default headers of each library, as one response showed them):`,
    '',
    ...subjects.map((s) => {
      const h = Object.entries(rows.find((r) => r.id === s.id)?.headers ?? {})
        .map(([n, v]) => `${n}: ${v}`)
        .join(' · ');
      return `- **${s.label}**: \`${s.config}\`${h === '' ? '' : `; headers \`${h}\``}`;
    }),
  ].join('\n');
  const charts: Chart[] = [
    {
      title: 'HTTP requests/s: ratio to the bare framework',
      subtitle: `autocannon, ${CONNECTIONS} connections, separate server process; memory store, then Redis; higher is better`,
      bars: rows
        .filter((r) => !r.id.startsWith('node:') && r.failures === 0)
        .map((r) => ({
          label: r.label.replace(' (rate-limit-redis)', ''),
          value: r.ratioToBare,
          kind:
            r.id.endsWith(':bare') || r.id.endsWith(':noop')
              ? 'reference'
              : r.id.includes(':sluice')
                ? 'sluice'
                : 'peer',
        })),
    },
  ];
  return { markdown, configs, charts, verdicts, settings, rows };
}

/** The HTTP section's report: the table, sluice head to head, the targets, the configurations, the chart. */
import { formatRate, formatRatio, table, type Verdict } from '../report/markdown.js';
import type { Chart } from '../report/svg.js';
import { CONNECTIONS, PIPELINING } from './load.js';
import type { HttpResult, HttpRow, HttpSettings } from './section.js';
import { CLIENT_HEADER, CLIENTS, type HttpSubject, httpSubject, LIMIT, WINDOW_MS } from './subjects.js';

const PEER_NAMES = { fastify: '@fastify/rate-limit', express: 'express-rate-limit' } as const;
const FRAMEWORK_NAMES = { fastify: 'Fastify', express: 'Express' } as const;

/**
 * Targets (reported, not enforced), all on server CPU per request, which moves far less with the
 * machine's other load than req/s: issue 24's. Fastify ahead of @fastify/rate-limit by 10% on the
 * memory store and on Redis with both on their defaults, within 5% of bare; Express ahead of
 * express-rate-limit by 20% on the memory store and 10% on Redis (rate-limit-redis), within 5% of
 * bare.
 */
const TARGETS = {
  fastify: { bare: 0.95, memoryPeer: 1.1, redisPeer: 1.1 },
  express: { bare: 0.95, memoryPeer: 1.2, redisPeer: 1.1 },
} as const;

const percent = (x: number) => `${Math.round(x * 100)}%`;
const valid = (r: HttpRow | undefined): r is HttpRow => r !== undefined && r.failures === 0;

/** min–max over the rounds, when there were several. */
const range = (values: readonly number[]) =>
  values.length > 1 ? `${formatRatio(Math.min(...values))}–${formatRatio(Math.max(...values))}` : '';

/** A sluice row against its rival: CPU per request (and server + Redis), then req/s. */
const versus = (r: HttpRow) =>
  `CPU ${formatRatio(r.cpuRatioToRival)}${r.cpuRatioToRivalByRound.length > 1 ? ` (rounds ${range(r.cpuRatioToRivalByRound)})` : ''}${Number.isFinite(r.redisCpuPerRequest) ? `, server + Redis CPU ${formatRatio(r.totalCpuRatioToRival)}` : ''}, req/s ${formatRatio(r.ratioToRival)}`;

function verdicts(rows: readonly HttpRow[]): Verdict[] {
  const row = (id: string) => rows.find((r) => r.id === id);
  const out: Verdict[] = [];
  for (const framework of ['fastify', 'express'] as const) {
    const name = FRAMEWORK_NAMES[framework];
    const peer = PEER_NAMES[framework];
    const targets = TARGETS[framework];
    const memory = row(`${framework}:sluice:memory`);
    if (memory !== undefined) {
      out.push({
        target: `HTTP: ${name} + sluice ≥ ${targets.bare}× bare, memory store (server CPU per request)`,
        met: valid(memory) ? memory.cpuRatioToBare >= targets.bare : undefined,
        figure: valid(memory)
          ? `${formatRatio(memory.cpuRatioToBare)}, req/s ${formatRatio(memory.ratioToBare)} (${peer}: ${formatRatio(row(`${framework}:peer:memory`)?.cpuRatioToBare ?? Number.NaN)}, req/s ${formatRatio(row(`${framework}:peer:memory`)?.ratioToBare ?? Number.NaN)})`
          : 'invalid',
      });
      if (targets.memoryPeer !== undefined)
        out.push({
          target: `HTTP: ${name} + sluice ÷ ${peer} ≥ ${targets.memoryPeer}×, memory store (server CPU per request)`,
          met:
            valid(memory) && valid(row(memory.rival!))
              ? memory.cpuRatioToRival >= targets.memoryPeer
              : undefined,
          figure: valid(memory) ? versus(memory) : 'invalid',
        });
    }
    const redis = row(`${framework}:sluice:redis`);
    if (redis !== undefined)
      out.push({
        target: `HTTP: ${name} + sluice ÷ ${peer} ≥ ${targets.redisPeer}×, Redis, defaults on both (server CPU per request)`,
        met:
          valid(redis) && valid(row(redis.rival!)) ? redis.cpuRatioToRival >= targets.redisPeer : undefined,
        figure: valid(redis) ? versus(redis) : 'invalid',
      });
    // Issue 13: local-first decisions should cost about what the memory store costs: ≥ 0.9× bare
    // Fastify, and Express's against its no-op middleware floor (its bare app does less than any middleware).
    const synced = row(`${framework}:sluice:synced`);
    const floor = framework === 'fastify' ? row('fastify:bare') : row('express:noop');
    if (synced !== undefined) {
      // Per-round CPU ratios to the bare app (as every other row), over the floor's for Express.
      const toFloor = (r: HttpRow | undefined) =>
        valid(r) && valid(floor)
          ? r.cpuRatioToBare / (framework === 'fastify' ? 1 : floor.cpuRatioToBare)
          : Number.NaN;
      const ratio = toFloor(synced);
      out.push({
        target: `HTTP: ${name} + sluice on SyncedStore ≥ 0.9× ${framework === 'fastify' ? 'bare' : 'the no-op middleware floor'} (server CPU per request)`,
        met: Number.isFinite(ratio) ? ratio >= 0.9 : undefined,
        figure: Number.isFinite(ratio)
          ? `${formatRatio(ratio)} (memory store: ${formatRatio(toFloor(memory))}; Redis CPU ${synced.redisCpuPerRequest.toFixed(1)} µs/req, exact Redis ${redis?.redisCpuPerRequest.toFixed(1) ?? '–'})`
          : 'invalid',
      });
    }
  }
  return out;
}

export function httpReport(
  settings: HttpSettings,
  subjects: readonly HttpSubject[],
  rows: readonly HttpRow[],
): HttpResult {
  const cells = (r: HttpRow) => [
    r.id.includes(':sluice') ? `**${r.label}**` : r.label,
    r.failures > 0 ? `invalid: ${r.failures} failures` : formatRate(r.rps),
    formatRatio(r.ratioToBare),
    r.cpuPerRequest.toFixed(1),
    formatRatio(r.cpuRatioToBare),
    `${r.p99}`,
    Number.isFinite(r.redisCpuPerRequest) ? r.redisCpuPerRequest.toFixed(1) : '',
    percent(r.serverCpu),
    percent(r.loadCpu),
  ];
  const headToHead = rows
    .filter((r) => r.rival !== undefined && rows.some((o) => o.id === r.rival))
    .map((r) => [
      `**${r.label}**`,
      httpSubject(r.rival!).label,
      ...(valid(r) && valid(rows.find((o) => o.id === r.rival))
        ? [
            formatRatio(r.cpuRatioToRival),
            range(r.cpuRatioToRivalByRound),
            Number.isFinite(r.redisCpuPerRequest) ? formatRatio(r.totalCpuRatioToRival) : '',
            formatRatio(r.ratioToRival),
          ]
        : ['invalid', '', '', '']),
    ]);
  const markdown = [
    `autocannon ${CONNECTIONS} connections, pipelining ${PIPELINING}, against one GET route answering a small JSON, each app in its own server process (the load generator runs in the bench process). ${settings.rounds} round${settings.rounds === 1 ? '' : 's'}; each round starts a **fresh server for every subject, bare apps included**, and gives each the same ${settings.warmupSeconds} s of the same load before its measurement of ${settings.seconds} s, so every server is as fresh and has served as much as every other when it is measured; every subject of a framework and traffic is warmed first${(settings.slices ?? 1) > 1 ? `, then the measurement is taken in ${settings.slices} slices of ${settings.seconds / settings.slices!} s, in turn with the others, so that a subject, its bare app and its rival are measured over the same stretch of time while the machine's speed drifts` : ''} (each round starts one subject later, so none is always measured first). Figures are medians over the rounds; ratios are taken within a round (a subject over its bare app, sluice over its rival) and their median reported. **Server CPU per request** ("server µs/req", "× bare (CPU)": the bare app's figure divided by the subject's) is the figure to read: it is what the app costs per request whoever wins the race for the 2 cores, and moves far less with the machine's other load than req/s, which the load generator, redis-server and anything else running share. Each server is one process: differences of a few percent are within what separate processes of the same app show here; the no-op floor rows (full runs) show what any hook or middleware costs. Limit ${LIMIT.toLocaleString('en')} per ${WINDOW_MS / 1000} s fixed window per client IP, so nothing is refused, except in the returning-clients rows: ${CLIENTS.toLocaleString('en')} clients (\`${CLIENT_HEADER}\`) in turn, each under a real limit of 20 per 10 s. A row with any non-2xx response, socket error or store error is marked invalid. "redis µs/req" is redis-server's CPU time per response (\`INFO cpu\`). "server CPU" and "load CPU" are the shares of one core the server and the load generator used.`,
    '',
    table(
      [
        'subject',
        'req/s',
        '× bare',
        'server µs/req',
        '× bare (CPU)',
        'p99 ms',
        'redis µs/req',
        'server CPU',
        'load CPU',
      ],
      rows.map(cells),
    ),
    '',
    headToHead.length > 0
      ? [
          'sluice head to head (per round, median; CPU ratios are the rival’s CPU per request over sluice’s, so above 1× sluice costs less; layered limits, which no peer has, against sluice’s one limit):',
          '',
          table(
            [
              'sluice subject',
              'compared with',
              'server CPU',
              'rounds (min–max)',
              'server + Redis CPU',
              'req/s',
            ],
            headToHead,
          ),
        ].join('\n')
      : '',
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
      title: 'HTTP: bare app’s server CPU per request ÷ the subject’s',
      subtitle: `autocannon, ${CONNECTIONS} connections, a fresh server process per subject and round; higher is better`,
      bars: rows
        .filter((r) => !r.id.startsWith('node:') && r.failures === 0 && !r.id.includes(':bare'))
        .map((r) => ({
          label: r.label.replace(' (rate-limit-redis)', ''),
          value: r.cpuRatioToBare,
          kind: r.id.endsWith(':noop') ? 'reference' : r.id.includes(':sluice') ? 'sluice' : 'peer',
        })),
    },
  ];
  return { markdown, configs, charts, verdicts: verdicts(rows), settings, rows };
}

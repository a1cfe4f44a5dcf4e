/**
 * HTTP throughput, p99 latency and server CPU per request: autocannon (in this process) against a
 * minimal app in a separate server process per subject. Every round starts a fresh server for
 * every subject (bare apps included), warms each, measures each (in slices taken in turn with the
 * other subjects of its framework, in full runs) and stops them all; the report gives medians over
 * the rounds of ratios taken within a round: to the bare app of the same framework and traffic,
 * and sluice to its peer.
 */
import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import type { Cores } from '../lib/pinning.js';
import { startRedis } from '../lib/redis-server.js';
import { formatRate, formatRatio, median } from '../lib/stats.js';
import type { Section, Verdict } from '../report/markdown.js';
import type { Chart } from '../report/svg.js';
import { joined, load, type Round } from './load.js';
import { httpReport } from './report.js';
import { type ServerProcess, startServer } from './server-process.js';
import {
  bareOf,
  CLIENT_HEADER,
  HTTP_SUBJECTS,
  type HttpSubject,
  httpSubject,
  inQuickRuns,
  rivalOf,
  type Shape,
  usesRedis,
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
  /** Throughput ÷ the bare app's in the same round; median over the rounds. */
  readonly ratioToBare: number;
  /** The bare app's server CPU per request ÷ this one's (per round, median): the throughput ratio of a CPU-bound server. */
  readonly cpuRatioToBare: number;
  /** What a sluice row is compared with head to head (`rivalOf`): the peer, or sluice's one limit for layered limits. */
  readonly rival: string | undefined;
  /** Throughput ÷ the rival's in the same round; median over the rounds (NaN without a rival). */
  readonly ratioToRival: number;
  /** The rival's server CPU per request ÷ this one's, per round, median. */
  readonly cpuRatioToRival: number;
  /** The same, each round's (how far apart the rounds were). */
  readonly cpuRatioToRivalByRound: readonly number[];
  /** The same with redis-server's CPU per request added on both sides (equals `cpuRatioToRival` without Redis). */
  readonly totalCpuRatioToRival: number;
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

/** The rate-limit headers of one response: proof that each subject sends its default headers. */
async function headersOf(server: ServerProcess, shape: Shape): Promise<Record<string, string>> {
  const response = await fetch(`http://127.0.0.1:${server.port}/`, {
    headers: shape === 'returning' ? { [CLIENT_HEADER]: 'headers-probe' } : {},
  });
  await response.arrayBuffer();
  const out: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (/ratelimit|retry-after/i.test(name)) out[name] = value;
  });
  return out;
}

export interface HttpSettings {
  /** Length of a subject's measurement in a round, s. */
  readonly seconds: number;
  readonly rounds: number;
  /** Load each (fresh) server gets right before its measurement, s. */
  readonly warmupSeconds: number;
  /**
   * A subject's measurement in a round, taken as this many slices in turn with the other subjects
   * of its group (its bare app, its rival), after all of them are warmed. @default 1
   */
  readonly slices?: number;
  /** Quick (CI) runs leave out the references and a few subjects (`inQuickRuns`). */
  readonly quick: boolean;
  /** Only these subjects (`focus.ts`); their bare apps are added. */
  readonly ids?: readonly string[];
  /** Pinning (lib/pinning.ts): servers under test on `subject`, redis-server beside the generator. */
  readonly cores?: Cores | undefined;
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
  const subjects = HTTP_SUBJECTS.filter(
    (s) =>
      (haveRedis || !usesRedis(s)) &&
      (!settings.quick || inQuickRuns(s)) &&
      (settings.ids === undefined ||
        settings.ids.some((id) => id === s.id || bareOf(httpSubject(id)) === s.id)),
  );
  const redis = haveRedis ? await startRedis(settings.cores?.generator) : undefined;
  const probe = redis === undefined ? undefined : new Redis({ host: '127.0.0.1', port: redis.port });
  const redisCpu = (s: HttpSubject) =>
    usesRedis(s) && probe !== undefined ? () => redisCpuMicros(probe) : undefined;
  const failures = new Map<string, number>(subjects.map((s) => [s.id, 0]));
  /** Per round, each subject's measurement (all of one round taken by servers of the same age). */
  const rounds: Map<string, Round>[] = [];
  const headers = new Map<string, Record<string, string>>();
  const storeErrors = new Map<string, number>();
  /** Bare apps first, each followed by its subjects: a subject is measured a few seconds from its bare app. */
  const order = subjects
    .filter((b) => bareOf(b) === b.id)
    .flatMap((b) => [b, ...subjects.filter((s) => s !== b && bareOf(s) === b.id)]);
  let t = performance.now();
  try {
    for (let r = 0; r < settings.rounds; r++) {
      // Fresh servers for every round, every one with the same life: started together, given the
      // same warm-up right before its one measurement, stopped together. (A bare app serving load
      // beside every subject would run far longer than they do, and read as a worse floor.)
      const servers = new Map<string, ServerProcess>();
      try {
        // Two at a time (one per core): startup is mostly loading modules.
        for (let i = 0; i < order.length; i += 2) {
          const pair = order.slice(i, i + 2);
          const started = await Promise.allSettled(
            pair.map((s) => startServer(s.id, redis?.port, [], settings.cores?.subject)),
          );
          // Keep every server that started, so `finally` stops it even when its pair failed.
          for (const [j, outcome] of started.entries())
            if (outcome.status === 'fulfilled') servers.set(pair[j]!.id, outcome.value);
          for (const outcome of started) if (outcome.status === 'rejected') throw outcome.reason;
        }
        if (r === 0) for (const s of order) headers.set(s.id, await headersOf(servers.get(s.id)!, s.shape));
        const round = new Map<string, Round>();
        // Each round starts one subject later within each bare app's group, so no subject is
        // always measured first (or right after its bare app).
        for (const group of groups(order)) {
          const turn = group.map((_, i) => group[(i + r) % group.length]!);
          const slices = settings.slices ?? 1;
          // Every subject of the group warmed, then measured in slices taken in turn: the machine's
          // speed drifts over seconds (a VM's neighbours), and slices spread each subject's
          // measurement over the same stretch of time as its bare app's and its rival's.
          for (const s of turn) {
            const warm = await load(servers.get(s.id)!, settings.warmupSeconds, undefined, s.shape);
            failures.set(s.id, failures.get(s.id)! + warm.failures);
          }
          const taken = new Map<string, Round[]>(turn.map((s) => [s.id, []]));
          for (let k = 0; k < slices; k++) {
            for (const s of turn) {
              const slice = await load(servers.get(s.id)!, settings.seconds / slices, redisCpu(s), s.shape);
              taken.get(s.id)!.push(slice);
            }
          }
          for (const s of turn) {
            const measured = joined(taken.get(s.id)!);
            failures.set(s.id, failures.get(s.id)! + measured.failures);
            round.set(s.id, measured);
          }
        }
        rounds.push(round);
      } finally {
        for (const [id, server] of servers)
          storeErrors.set(id, (storeErrors.get(id) ?? 0) + (await server.stop()).storeErrors);
      }
      log(`  round ${r + 1} of ${settings.rounds} in ${((performance.now() - t) / 1000).toFixed(1)} s`);
      t = performance.now();
    }
  } finally {
    probe?.disconnect();
    await redis?.stop();
  }

  const rows: HttpRow[] = subjects.map((s) => {
    const list = rounds.map((round) => round.get(s.id)!);
    /** Per round, this subject's figure over another's measured in the same round; median. */
    const byRound = (other: string | undefined, f: (x: Round, y: Round) => number) =>
      other === undefined || !subjects.some((o) => o.id === other)
        ? []
        : rounds.map((round) => f(round.get(s.id)!, round.get(other)!));
    const per = (other: string | undefined, f: (x: Round, y: Round) => number) => median(byRound(other, f));
    const rival = rivalOf(s);
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
      ratioToBare: per(bareOf(s), (x, bare) => x.rps / bare.rps),
      cpuRatioToBare: per(bareOf(s), (x, bare) => bare.cpuPerRequest / x.cpuPerRequest),
      rival,
      ratioToRival: per(rival, (x, y) => x.rps / y.rps),
      cpuRatioToRival: per(rival, (x, y) => y.cpuPerRequest / x.cpuPerRequest),
      cpuRatioToRivalByRound: byRound(rival, (x, y) => y.cpuPerRequest / x.cpuPerRequest),
      totalCpuRatioToRival: per(
        rival,
        (x, y) =>
          (y.cpuPerRequest + (y.redisCpuPerRequest || 0)) / (x.cpuPerRequest + (x.redisCpuPerRequest || 0)),
      ),
      failures: failures.get(s.id)! + (storeErrors.get(s.id) ?? 0),
      storeErrors: storeErrors.get(s.id) ?? 0,
      headers: headers.get(s.id) ?? {},
    };
  });
  for (const r of rows)
    log(
      `  ${r.label}: ${formatRate(r.rps)} req/s (${formatRatio(r.ratioToBare)} bare), p99 ${r.p99} ms, ${r.cpuPerRequest.toFixed(1)} µs CPU/req (${formatRatio(r.cpuRatioToBare)})${r.rival === undefined ? '' : `; ÷ ${r.rival}: ${formatRatio(r.ratioToRival)} req/s, ${formatRatio(r.cpuRatioToRival)} CPU`}${r.failures > 0 ? `, INVALID: ${r.failures} failures` : ''}`,
    );
  return { status: 'measured', result: httpReport(settings, subjects, rows) };
}

/** `order` cut into its bare apps' groups (each bare app followed by its subjects). */
function groups(order: readonly HttpSubject[]): HttpSubject[][] {
  const out: HttpSubject[][] = [];
  for (const s of order) {
    if (bareOf(s) === s.id) out.push([s]);
    else out.at(-1)!.push(s);
  }
  return out;
}

/**
 * `pnpm --filter @sluice/bench run bench:adaptive [--quick] [--framework express] [--subject vegas,aimd]`: adaptive concurrency against fixed
 * limits and @fastify/under-pressure, over real HTTP, on apps whose handler holds a real
 * bottleneck (a downstream of 20 slots × 50 ms: 400 requests per second).
 *
 * Per framework (Fastify, Express) and subject, each round in a fresh app process pinned to the
 * subject core (the load generator, this process, on the other):
 * - no load: 10% of capacity; the app's p99 of served requests is the reference;
 * - 2× and 4× capacity, after a warm-up of `--warm` s (default 5) at 90% of capacity, as a
 *   running service meets a spike (Netflix's test shape steps 50%, 90%, 200%); the warm-up's answers
 *   are not counted. Without it each round would measure the controller's cold start too (Envoy's
 *   gradient pins concurrency to 3 while it first measures minRTT): a restart into overload is
 *   another scenario, which the simulator shows (`pnpm simulate adaptive --bench-shape`).
 * - 2× and 4× capacity, 1 request in 7 critical (`x-priority: critical`; why: `CRITICAL_EVERY`), open-loop (a fixed
 *   rate, whatever the answers): goodput (2xx per second), goodput within a deadline (2xx answered
 *   within 2 × the no-load p99 the client saw, per second: a late answer is often a useless one),
 *   the app's p99 of served requests, and the share of critical and of low-priority requests served;
 * - the adaptive subjects once more at 1.5× capacity, the downstream halving its capacity half way:
 *   the time until the limit stays within ±20% of where it settles, and its swing there.
 *
 * The figures are evidence only on a quiet machine: the run prints `uptime` before and after and
 * refuses to call them anything else when the load average is high. Never on a shared machine.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
// The simulator's reading of the same 100 ms limit samples: one definition of "settled".
import { limitRecovery } from '../../../packages/playground/src/sim/adaptive/bench-shape.js';
import { benchCores, pin, quietEnough, uptime } from '../lib/pinning.js';
import { openLoop } from './open-loop.js';
import {
  CRITICAL_EVERY,
  type Framework,
  type FromApp,
  PRIORITY_HEADER,
  SERVICE_MS,
  SLOTS,
  type SubjectId,
  subjectsOf,
  type ToApp,
} from './subjects.js';

const APP = fileURLToPath(new URL('./app.ts', import.meta.url));
const CAPACITY = (SLOTS / SERVICE_MS) * 1000;

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    seconds: { type: 'string' },
    warm: { type: 'string' },
    framework: { type: 'string' },
    subject: { type: 'string' },
  },
});
/** Seconds per measured round; `--quick` is a smoke run of the wiring, not a measurement. */
const SECONDS = Number(values.seconds ?? (values.quick ? 1 : 20));
const SETTLE_SECONDS = values.quick ? 4 : 40;
/** Seconds at 90% of capacity before each overload round, not counted. */
const WARM_SECONDS = Number(values.warm ?? (values.quick ? 0.5 : 5));
const FRAMEWORKS: readonly Framework[] =
  values.framework === undefined ? ['fastify', 'express'] : [values.framework as Framework];
const cores = benchCores();
if (cores !== undefined) pin(process.pid, cores.generator);

interface App {
  readonly port: number;
  ask(message: ToApp): void;
  stats(): Promise<Extract<FromApp, { type: 'stats' }>>;
  stop(): Promise<void>;
}

async function startApp(framework: Framework, subject: SubjectId): Promise<App> {
  const child: ChildProcess = fork(APP, [framework, subject], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  if (cores !== undefined && child.pid !== undefined) pin(child.pid, cores.subject);
  const next = <T extends FromApp['type']>(type: T) =>
    new Promise<Extract<FromApp, { type: T }>>((resolve, reject) => {
      const onMessage = (message: FromApp) => {
        if (message.type !== type) return;
        child.off('message', onMessage);
        resolve(message as Extract<FromApp, { type: T }>);
      };
      child.on('message', onMessage);
      child.once('exit', (code) => reject(new Error(`app exited (${code}) before '${type}'`)));
    });
  const { port } = await next('ready');
  return {
    port,
    ask: (message) => child.send(message),
    stats() {
      const reply = next('stats');
      child.send('stats');
      return reply;
    },
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send('stop');
      await exited;
    },
  };
}

interface Offered {
  readonly goodput: number;
  /** 2xx per second answered within the deadline (ms) given to `offer`. */
  readonly inDeadline: number;
  /** The client's p99 of 2xx answers, ms. */
  readonly p99: number;
  readonly criticalServed: number;
  readonly lowServed: number;
  readonly failures: number;
}

/** Open-loop load at `rate` requests per second for `seconds`, evenly spaced, 1 in `CRITICAL_EVERY` critical. */
async function offer(
  app: App,
  rate: number,
  seconds: number,
  deadline = Number.POSITIVE_INFINITY,
): Promise<Offered> {
  const { sent, ok, failures, latencies } = await openLoop(
    `http://127.0.0.1:${app.port}/work`,
    rate,
    seconds,
    {
      header: PRIORITY_HEADER,
      criticalEvery: CRITICAL_EVERY,
      timeoutMs: 10_000,
    },
  );
  latencies.sort((a, b) => a - b);
  return {
    goodput: (ok.critical + ok.low) / seconds,
    inDeadline: latencies.filter((ms) => ms <= deadline).length / seconds,
    p99: latencies[Math.max(0, Math.ceil(0.99 * latencies.length) - 1)] ?? Number.NaN,
    criticalServed: ok.critical / Math.max(1, sent.critical),
    lowServed: ok.low / Math.max(1, sent.low),
    failures,
  };
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

async function main(): Promise<void> {
  const before = quietEnough();
  console.log(
    `# Adaptive concurrency bench${values.quick ? ' (--quick: a smoke run, not a measurement)' : ''}`,
  );
  console.log(`\n${uptime()}`);
  console.log(
    `cores: ${cores === undefined ? 'not pinned' : `load generator ${cores.generator}, app ${cores.subject}`}; downstream ${SLOTS} slots × ${SERVICE_MS} ms = ${CAPACITY}/s; ${SECONDS} s per round after ${WARM_SECONDS} s at 90%`,
  );
  if (!before.quiet)
    console.log(`load average ${before.load.toFixed(2)}: NOT a quiet machine, the figures are not evidence`);
  for (const framework of FRAMEWORKS) {
    console.log(`\n## ${framework}\n`);
    console.log(
      '| subject | no-load p99 ms | load | goodput/s | in deadline/s | p99 served ms | critical served | low served | errors |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|');
    const settles: string[] = [];
    // `--subject vegas,gradient2`: a comma-separated list, to measure a few subjects in one run.
    const chosen = values.subject?.split(',');
    for (const subject of subjectsOf(framework).filter((s) => chosen === undefined || chosen.includes(s))) {
      let app = await startApp(framework, subject);
      const quiet = await offer(app, CAPACITY * 0.1, Math.max(1, SECONDS / 4));
      const noLoad = (await app.stats()).p99;
      await app.stop();
      // The deadline: twice the no-load p99 the client saw (the app's own p99 leaves out HTTP).
      const deadline = 2 * quiet.p99;
      for (const factor of [2, 4]) {
        app = await startApp(framework, subject);
        await offer(app, CAPACITY * 0.9, WARM_SECONDS);
        await app.stats(); // forgets the warm-up's latencies
        const offered = await offer(app, CAPACITY * factor, SECONDS, deadline);
        const { p99 } = await app.stats();
        await app.stop();
        console.log(
          `| ${subject} | ${noLoad.toFixed(1)} | ${factor}× | ${Math.round(offered.goodput)} | ${Math.round(offered.inDeadline)} | ${p99.toFixed(1)} | ${pct(offered.criticalServed)} | ${pct(offered.lowServed)} | ${offered.failures} |`,
        );
      }
      if (['vegas', 'gradient2', 'aimd', 'envoy-gradient'].includes(subject)) {
        app = await startApp(framework, subject);
        const half = SETTLE_SECONDS / 2;
        const halving = setTimeout(() => app.ask('halve'), half * 1000);
        await offer(app, CAPACITY * 1.5, SETTLE_SECONDS);
        clearTimeout(halving);
        const { limits } = await app.stats();
        await app.stop();
        const s = limitRecovery(limits, Math.round(half * 10));
        settles.push(
          `| ${subject} | ${s.after.toFixed(1)} | ${Number.isNaN(s.steadyAt) ? '–' : s.steadyAt} | ±${pct(s.swing)} |`,
        );
      }
    }
    console.log('\nThe downstream halves its capacity half way through 1.5× its original capacity:\n');
    console.log('| subject | settles within ±20% after (s) | settles at | swing there |');
    console.log('|---|---|---|---|');
    for (const line of settles) console.log(line);
  }
  console.log(`\n${uptime()}`);
}

await main();

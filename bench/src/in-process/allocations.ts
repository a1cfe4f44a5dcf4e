/**
 * Bytes allocated per decision, in-process: a figure that does not move with the machine's load
 * (unlike decisions per second), for diagnosis of issue 24. Node 20 has no allocation counter, so
 * each algorithm's group runs in a child `node --expose-gc` whose young generation is large enough
 * (`--min-semi-space-size=--max-semi-space-size=SEMI_SPACE_MB`) that no scavenge runs in the
 * measured loop: after warm-up (so the code measured is optimized) and `gc()`, the growth of
 * `v8.getHeapStatistics().used_heap_size` over N decisions, divided by N, is what each decision
 * allocated. A GC inside the loop would hide allocations: the child watches `gc` performance
 * entries and reports any that started during a measurement, and measures N and N/2 decisions
 * (the two figures must agree: a fixed cost or a change of tier would show as a difference; both are
 * measured again, a few times, until they do). Optimization runs on the main thread
 * (`--no-concurrent-recompilation`), so that what is measured does not depend on the load either.
 *
 * Subjects per algorithm, each with the configuration of the in-process table: sluice
 * `new Limiter({ algorithm, store: new MemoryStore(…) })`, `checkSync(key)` and `await check(key)`, the
 * raw step over a `Map`, the floor, and express-rate-limit's MemoryStore awaited as its middleware
 * awaits it (the awaited rows count the promises each await costs); on the hot key and cycling
 * through 10,000 keys.
 *
 * usage: node --import tsx src/in-process/allocations.ts [--n=100000] [--only=token-bucket,gcra]
 *        (a child is started per algorithm with `--child=<algorithm>`)
 */
import { PerformanceObserver, performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import { type Decision, Limiter, MemoryStore } from '@sluice/core';
import { runChild } from '../lib/child.js';
import { ALGORITHMS, type Instance, type Subject, subject } from './subjects.js';

const SEMI_SPACE_MB = 256;
/** The scenarios of the in-process table (`child.ts`, which runs on import, so not imported). */
const SCENARIOS = { hot: 1, '10k': 10_000 } as const;
const WARMUP = 500_000;
/** Most measurements of N and N/2 decisions before a subject's figure is reported as moving. */
const ROUNDS = 6;

export interface AllocationResult {
  /** subject id → scenario → bytes per decision over N, over N/2, and GCs seen in the loops. */
  readonly [id: string]: Record<string, { perDecision: number; perDecisionHalf: number; gcs: number }>;
}

const argument = (name: string): string | undefined =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

function keysFor(count: number): string[] {
  return count === 1 ? ['hot'] : Array.from({ length: count }, (_, i) => `user:${i}`);
}

/** Where each answer goes: out of V8's sight, as a user's decision goes to the response. */
const sink: { last: unknown } = { last: undefined };

/**
 * Runs `n` decisions cycling through `keys` from `cursor`; returns the new cursor and refusals.
 * Every answer is stored in `sink`: read only for `allowed`, a decision whose call V8 inlines
 * whole is never built (escape analysis), and the hot key's fixed window then allocated 192 B
 * per decision instead of the 361 B any caller that uses the decision pays.
 */
function drive(x: Instance, keys: readonly string[], n: number, cursor: number): [number, number] {
  const { op, allowed } = x;
  let i = cursor;
  let refused = 0;
  const length = keys.length;
  for (let k = 0; k < n; k++) {
    const answer = op(keys[i]!);
    sink.last = answer;
    if (!allowed(answer)) refused++;
    if (++i === length) i = 0;
  }
  return [i, refused];
}

/**
 * `drive` for a subject its users await (`await limiter.check(key)`, express-rate-limit's
 * `await store.increment(key)`): the awaits' own promises are counted too, as each call costs them.
 */
async function driveAwaited(
  x: Instance,
  keys: readonly string[],
  n: number,
  cursor: number,
): Promise<[number, number]> {
  const { op, allowed } = x;
  let i = cursor;
  let refused = 0;
  const length = keys.length;
  for (let k = 0; k < n; k++) {
    const answer = await op(keys[i]!);
    sink.last = answer;
    if (!allowed(answer)) refused++;
    if (++i === length) i = 0;
  }
  return [i, refused];
}

const LOG = 'sliding-window-log';
/**
 * The log's state holds an entry per millisecond with admissions in its window, so what a step
 * allocates follows the decision rate when the subjects read the clock. These two rows hand it a
 * simulated clock instead, PER_MS decisions per millisecond: the hot key's log holds ten entries
 * (its 10 ms window), each of 10,000 keys comes back 5 simulated ms later and finds its state
 * live (one or two entries), as in the table's 10,000-key scenario. The same figure on any
 * machine. The options object is reused, so that it is not counted.
 */
const PER_MS = 2000;
const CLOCKED = [`sluice-clocked:${LOG}`, `raw-clocked:${LOG}`];

function clocked(id: string): Subject {
  return {
    id,
    label: id,
    config: '',
    async: false,
    make() {
      const algorithm = ALGORITHMS[LOG]!.make();
      const start = Date.now();
      let decisions = 0;
      const options = { now: start };
      if (id.startsWith('sluice')) {
        const store = new MemoryStore({ maxKeys: 100_000 });
        const limiter = new Limiter({ algorithm, store });
        return {
          op: (key) => {
            options.now = start + Math.floor(decisions++ / PER_MS);
            return limiter.checkSync(key, options);
          },
          allowed: (result) => (result as Decision).allowed,
          close: () => store.shutdown(),
        };
      }
      const map = new Map<string, unknown>();
      return {
        op: (key) => {
          const step = algorithm.consume(map.get(key), start + Math.floor(decisions++ / PER_MS), 1, 'raw');
          map.set(key, step.state);
          return step.decision;
        },
        allowed: (result) => (result as Decision).allowed,
      };
    },
  };
}

/**
 * The memory store's insert path: a key never seen before on every decision (a flood of unique
 * keys), on the token bucket of the table and the default `MemoryStore` (100,000 keys, so each
 * insert past them evicts one). The keys are made before the loop, so their strings are not
 * counted.
 */
const NEW_KEYS = 'sluice-new-keys:token-bucket';

const newKeys: Subject = {
  id: NEW_KEYS,
  label: NEW_KEYS,
  config: '',
  async: false,
  make() {
    const store = new MemoryStore();
    const limiter = new Limiter({ algorithm: ALGORITHMS['token-bucket']!.make(), store });
    const keys = Array.from({ length: WARMUP + 2 * ROUNDS * n }, (_, i) => `new:${i}`);
    let next = 0;
    return {
      op: () => limiter.checkSync(keys[next++]!),
      allowed: (result) => (result as Decision).allowed,
      close: () => store.shutdown(),
    };
  },
};

/** The peer the awaited rows answer to (issue 36's goal), measured in every group as the floor is. */
const ERL = 'express-rate-limit';

const gc = (globalThis as { gc?: () => void }).gc;

async function child(algorithm: string, n: number): Promise<void> {
  if (gc === undefined) throw new Error('run the child with --expose-gc');
  const gcs: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcs.push(entry.startTime);
  });
  observer.observe({ entryTypes: ['gc'] });
  const ids = [`sluice:${algorithm}`, `sluice-await:${algorithm}`, `raw:${algorithm}`, 'floor', ERL];
  if (algorithm === LOG) ids.push(...CLOCKED);
  if (algorithm === 'token-bucket') ids.push(NEW_KEYS);
  const result: Record<string, AllocationResult[string]> = {};
  for (const id of ids) result[id] = {};
  for (const [scenario, count] of Object.entries(SCENARIOS)) {
    const keys = keysFor(count);
    for (const id of ids) {
      // The hot key is one key: there are only new keys in the 10,000-key scenario.
      if (id === NEW_KEYS && count === 1) continue;
      const made = CLOCKED.includes(id) ? clocked(id) : id === NEW_KEYS ? newKeys : subject(id);
      const instance = made.make(count);
      const run = made.async ? driveAwaited : async (...a: Parameters<typeof drive>) => drive(...a);
      let [cursor, refused] = await run(instance, keys, WARMUP, 0);
      const measure = async (decisions: number) => {
        gc();
        gc();
        await new Promise((resolve) => setImmediate(resolve));
        const start = performance.now();
        const before = v8.getHeapStatistics().used_heap_size;
        const [next, no] = await run(instance, keys, decisions, cursor);
        const after = v8.getHeapStatistics().used_heap_size;
        const end = performance.now();
        cursor = next;
        refused += no;
        // GC entries arrive asynchronously: let them in before counting.
        await new Promise((resolve) => setImmediate(resolve));
        await new Promise((resolve) => setTimeout(resolve, 10));
        const inLoop = gcs.filter((t) => t >= start && t <= end).length;
        return { bytes: (after - before) / decisions, inLoop };
      };
      // Tier-up may still change the code's allocations after warm-up: measure N and N/2 in turn
      // until the two agree (within a byte per decision), at most ROUNDS times.
      let full = await measure(n);
      let half = await measure(n / 2);
      let gcsSeen = full.inLoop + half.inLoop;
      for (let r = 1; r < ROUNDS && Math.abs(full.bytes - half.bytes) > 1; r++) {
        full = await measure(n);
        half = await measure(n / 2);
        gcsSeen += full.inLoop + half.inLoop;
      }
      if (refused > 0) throw new Error(`${id} refused ${refused} decisions`);
      result[id]![scenario] = {
        perDecision: full.bytes,
        perDecisionHalf: half.bytes,
        gcs: gcsSeen,
      };
      instance.close?.();
    }
  }
  observer.disconnect();
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

const round = (x: number) => (Math.abs(x) < 10 ? x.toFixed(1) : x.toFixed(0));

async function main(n: number): Promise<void> {
  const scenarios = Object.keys(SCENARIOS);
  const lines = [
    `Bytes allocated per decision (heap growth over ${n.toLocaleString('en-US')} decisions after warm-up, no GC in the loop; allocation, not time). Node ${process.version}.`,
    '',
    `| subject | ${scenarios.map((s) => `${s} (B/decision)`).join(' | ')} |`,
    `|---|${scenarios.map(() => '---:').join('|')}|`,
  ];
  let floorRow: string | undefined;
  let erlRow: string | undefined;
  let invalid = 0;
  let moving = false;
  const only = argument('only')?.split(',');
  for (const algorithm of Object.keys(ALGORITHMS)) {
    if (only !== undefined && !only.includes(algorithm)) continue;
    process.stderr.write(`  allocations: ${algorithm}\n`);
    const result = await runChild<AllocationResult>(
      'in-process/allocations.ts',
      [`--child=${algorithm}`, `--n=${n}`],
      [
        // Optimization on the main thread: when the optimized code arrives then depends on the
        // decisions run, not on how busy the machine is (a background compile finishing mid-loop
        // gave figures 200 B apart between runs).
        '--no-concurrent-recompilation',
        `--min-semi-space-size=${SEMI_SPACE_MB}`,
        `--max-semi-space-size=${SEMI_SPACE_MB}`,
        '--expose-gc',
      ],
    );
    const row = (id: string, label: string) => {
      const cells = scenarios.map((s) => {
        const r = result[id]![s];
        if (r === undefined) return '—';
        // A GC in the loop hides allocations: the figure is void. N and N/2 still apart after
        // ROUNDS measurements: the figure moves (the sliding window log's state holds an entry
        // per ms with admissions in its window, so its size follows the decision rate).
        if (r.gcs > 0) {
          invalid++;
          return `invalid (${r.gcs} GC in the loop)`;
        }
        const drifting = Math.abs(r.perDecision - r.perDecisionHalf) > 1;
        if (drifting) moving = true;
        return drifting
          ? `${round(r.perDecision)}* (N/2: ${round(r.perDecisionHalf)})`
          : round(r.perDecision);
      });
      return `| ${label} | ${cells.join(' | ')} |`;
    };
    lines.push(row(`sluice:${algorithm}`, `sluice ${algorithm}, \`checkSync(key)\``));
    lines.push(row(`sluice-await:${algorithm}`, `sluice ${algorithm}, \`await check(key)\``));
    lines.push(row(`raw:${algorithm}`, `raw ${algorithm} + Map`));
    if (algorithm === 'token-bucket')
      lines.push(row(NEW_KEYS, 'sluice token-bucket, a new key every decision (insert and eviction)'));
    if (algorithm === LOG) {
      lines.push(row(CLOCKED[0]!, `sluice ${LOG}, \`check(key, { now })\`, simulated clock`));
      lines.push(row(CLOCKED[1]!, `raw ${LOG} + Map, simulated clock`));
    }
    floorRow ??= row('floor', 'inline Map token bucket (floor)');
    erlRow ??= row(ERL, 'express-rate-limit MemoryStore, `await store.increment(key)`');
  }
  lines.push(floorRow!);
  lines.push(erlRow!);
  if (moving)
    lines.push(
      '',
      '\\* N and N/2 decisions disagreed: this figure is not a per-decision constant (a state whose size follows the clock, or maps growing in steps on the insert path).',
    );
  process.stdout.write(`${lines.join('\n')}\n`);
  if (invalid > 0) process.exitCode = 1;
}

const childOf = argument('child');
const n = Number(argument('n') ?? 100_000);
if (childOf !== undefined) await child(childOf, n);
else await main(n);

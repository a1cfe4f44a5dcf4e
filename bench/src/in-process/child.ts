/**
 * One in-process group, in its own Node process: every subject of the group is built fresh, warmed
 * up for the same time, then measured in interleaved rounds (ABCABC…) on the hot key and on 10,000
 * keys. Prints one JSON line: ops/s per round, per subject and scenario.
 *
 * usage: child.ts <roundMs> <rounds> <warmupMs> <subjectId,subjectId,…>
 */
import { performance } from 'node:perf_hooks';
import { type Instance, subject } from './subjects.js';

export const SCENARIOS = { hot: 1, '10k': 10_000 } as const;
export type ScenarioName = keyof typeof SCENARIOS;

export interface GroupResult {
  /** scenario → subject id → ops/s of each round, and refusals seen (should be 0). */
  readonly [scenario: string]: Record<string, { rounds: number[]; refused: number }>;
}

const BATCH = 1000;

function keysFor(count: number): string[] {
  return count === 1 ? ['hot'] : Array.from({ length: count }, (_, i) => `user:${i}`);
}

/**
 * Every answer is kept here, as a user's decision is kept to write its headers: an answer read only
 * for `allowed` can let V8 inline a check whole and never build the decision it returns (measured
 * with bench:alloc: 192 B per hot fixed-window check without a sink, 361 B with one), timing a
 * call no user makes. Every subject's answer goes here alike.
 */
const out: { sink: unknown } = { sink: undefined };

type Drive = (
  x: Instance,
  keys: readonly string[],
  ms: number,
  cursor: { i: number },
) => Promise<{ perSecond: number; refused: number }>;

/**
 * The measuring loop's source: runs the subject in batches for about `ms`, cycling through `keys`.
 * An awaited subject is awaited inline, as a user's handler awaits it (`await limiter.check(key)`);
 * a rejection counts as a refusal (rate-limiter-flexible rejects when it refuses). The rate is per
 * CPU-second of this process (all its threads: GC and compiler included): on a shared machine,
 * wall-clock rates move with the other tenants' load far more than CPU time does.
 */
function loopSource(awaited: boolean): string {
  const call = awaited
    ? `try {
          const answer = await op(keys[i]);
          out.sink = answer;
          if (!allowed(answer)) refused++;
        } catch {
          refused++;
        }`
    : `const answer = op(keys[i]);
        out.sink = answer;
        if (!allowed(answer)) refused++;`;
  return `return async function drive(x, keys, ms, cursor) {
  const { op, allowed } = x;
  let ops = 0;
  let refused = 0;
  let i = cursor.i;
  const n = keys.length;
  const start = performance.now();
  const cpu = process.cpuUsage();
  let elapsed = 0;
  while (elapsed < ms) {
    for (let b = 0; b < ${BATCH}; b++) {
      ${call}
      if (++i === n) i = 0;
    }
    ops += ${BATCH};
    elapsed = performance.now() - start;
  }
  cursor.i = i;
  const used = process.cpuUsage(cpu);
  return { perSecond: ops / ((used.user + used.system) / 1e6), refused };
};`;
}

/**
 * Each subject's own copy of the measuring loop, compiled from its own source text. A user's code
 * calls one limiter from one call site; one loop shared by every subject of the process made its
 * `op(key)` and `allowed(answer)` call sites (and its `await`) see eight to twelve functions, so
 * V8 optimized them as megamorphic calls and inlined none of them, a cost no user pays, and not
 * the same for every subject: it slowed the synchronous ones (the floor, sluice not awaited,
 * limiter) more than the awaited ones, whose promise machinery it does not touch. The subject's id
 * in a comment makes each source text distinct: V8 caches code compiled from equal source texts,
 * and the copies would then share one feedback vector, which is the shared loop again. Every
 * subject, peers and floors included, gets its loop this way.
 */
function loopFor(id: string, awaited: boolean): Drive {
  const source = `${loopSource(awaited)}\n// the measuring loop of ${id}`;
  return new Function('performance', 'process', 'out', source)(performance, process, out) as Drive;
}

async function main(): Promise<void> {
  const [roundMs, rounds, warmupMs] = process.argv.slice(2, 5).map(Number) as [number, number, number];
  const ids = process.argv[5]!.split(',');
  const result: Record<string, Record<string, { rounds: number[]; refused: number }>> = {};
  for (const [scenario, count] of Object.entries(SCENARIOS)) {
    const keys = keysFor(count);
    const subjects = ids.map((id) => {
      const s = subject(id);
      const drive = loopFor(`${id} ${scenario}`, s.async);
      return { s, drive, instance: s.make(count), cursor: { i: 0 }, rounds: [] as number[], refused: 0 };
    });
    // Same warm-up for every subject, interleaved too.
    for (let w = 0; w < 2; w++)
      for (const x of subjects)
        x.refused += (await x.drive(x.instance, keys, warmupMs / 2, x.cursor)).refused;
    for (let r = 0; r < rounds; r++) {
      for (const x of subjects) {
        const { perSecond, refused } = await x.drive(x.instance, keys, roundMs, x.cursor);
        x.rounds.push(perSecond);
        x.refused += refused;
      }
    }
    result[scenario] = Object.fromEntries(
      subjects.map((x) => [x.s.id, { rounds: x.rounds, refused: x.refused }]),
    );
    for (const x of subjects) x.instance.close?.();
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

await main();

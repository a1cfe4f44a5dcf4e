/**
 * Returning clients under their limit, in its own Node process: 10,000 clients each coming back
 * every second (simulated time, handed to every subject as `now`: 0.1 ms per decision), on
 * `tokenBucket({ capacity: 20, refillInterval: '10s' })`. A client takes one token a second and
 * two come back, so its bucket is full again half a second after each visit: a store that drops
 * full buckets re-inserts the client on every visit. Beside it, the same limiter, traffic and
 * call on a bucket that never fills up between visits (its state is always held), and the inline
 * floor on the returning traffic. Interleaved rounds; then one untimed pass over every client
 * counts the decisions that found no state (the insert path).
 *
 * usage: returning.ts <roundMs> <rounds> <warmupMs>
 */
import { performance } from 'node:perf_hooks';
import { Limiter, type MemoryStore, tokenBucket } from '@sluice/core';
import { inlineTokenBucket } from './floor.js';
import { ALGORITHMS } from './subjects.js';

export const CLIENTS = 10_000;
/** Simulated ms between two decisions: each client comes back every CLIENTS × STEP = 1000 ms. */
const STEP = 1000 / CLIENTS;
const BATCH = 1000;

export interface ReturningSubject {
  readonly id: string;
  readonly label: string;
  readonly config: string;
}

export const RETURNING: readonly ReturningSubject[] = [
  {
    id: 'returning:sluice',
    label: 'sluice token-bucket, returning clients (bucket full again between visits)',
    config: `new Limiter({ algorithm: tokenBucket({ capacity: 20, refillInterval: '10s' }) }).checkSync(key, { now })`,
  },
  {
    id: 'returning:sluice-kept',
    label: 'sluice token-bucket, same traffic, state kept (never full between visits)',
    config: `new Limiter({ algorithm: ${ALGORITHMS['token-bucket']!.config} }).checkSync(key, { now })`,
  },
  {
    id: 'returning:floor',
    label: 'inline Map token bucket, returning clients',
    config: 'the floor at capacity 20, 2 tokens/s, handed the simulated now',
  },
];

export interface ReturningResult {
  /** subject id → ops/s of each round, refusals (must be 0), decisions that found no state of CLIENTS. */
  readonly [id: string]: { rounds: number[]; refused: number; inserts?: number };
}

interface Driven {
  readonly op: (key: string, now: number) => boolean;
  /** Whether the store holds state for `key` (sluice subjects only). */
  readonly held?: (key: string) => boolean;
  now: number;
  i: number;
}

/** Where sluice's decisions go, as child.ts's `sink`. */
export let sink: unknown;

function make(id: string, t0: number): Driven {
  if (id === 'returning:floor') {
    const take = inlineTokenBucket(20, 2 / 1000);
    return { op: take, now: t0, i: 0 };
  }
  const algorithm =
    id === 'returning:sluice'
      ? tokenBucket({ capacity: 20, refillInterval: '10s' })
      : ALGORITHMS['token-bucket']!.make();
  const limiter = new Limiter({ algorithm });
  const store = limiter.store as MemoryStore;
  const bound = limiter.limits[0]!.algorithm;
  return {
    op: (key, now) => {
      const decision = limiter.checkSync(key, { now });
      // Kept, as a user keeps it for the headers (see child.ts's sink): V8 must build it.
      sink = decision;
      return decision.allowed;
    },
    held: (key) => store.inspect(bound, key) !== undefined,
    now: t0,
    i: 0,
  };
}

/** A fixed shuffle of the client keys, so that visiting order is not insertion order. */
function clientKeys(): string[] {
  const keys = Array.from({ length: CLIENTS }, (_, i) => `client:${i}`);
  let seed = 20261124;
  for (let i = keys.length - 1; i > 0; i--) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const j = seed % (i + 1);
    [keys[i], keys[j]] = [keys[j]!, keys[i]!];
  }
  return keys;
}

function drive(x: Driven, keys: readonly string[], ms: number) {
  const { op } = x;
  let ops = 0;
  let refused = 0;
  let { i, now } = x;
  const start = performance.now();
  const cpu = process.cpuUsage();
  let elapsed = 0;
  while (elapsed < ms) {
    for (let b = 0; b < BATCH; b++) {
      if (!op(keys[i]!, now)) refused++;
      now += STEP;
      if (++i === CLIENTS) i = 0;
    }
    ops += BATCH;
    elapsed = performance.now() - start;
  }
  x.i = i;
  x.now = now;
  // Per CPU-second of this process (all its threads: GC and compiler included): on a shared
  // machine, wall-clock rates move with the other tenants' load far more than CPU time does.
  const used = process.cpuUsage(cpu);
  return { perSecond: ops / ((used.user + used.system) / 1e6), refused };
}

/** One more pass over every client, untimed: how many decisions found no state. */
function inserts(x: Driven, keys: readonly string[]): number {
  let missing = 0;
  for (let n = 0; n < CLIENTS; n++) {
    if (!x.held!(keys[x.i]!)) missing++;
    x.op(keys[x.i]!, x.now);
    x.now += STEP;
    if (++x.i === CLIENTS) x.i = 0;
  }
  return missing;
}

async function main(): Promise<void> {
  const [roundMs, rounds, warmupMs] = process.argv.slice(2, 5).map(Number) as [number, number, number];
  const keys = clientKeys();
  const t0 = Date.now();
  const subjects = RETURNING.map((s) => ({ s, x: make(s.id, t0), rounds: [] as number[], refused: 0 }));
  for (let w = 0; w < 2; w++) for (const y of subjects) y.refused += drive(y.x, keys, warmupMs / 2).refused;
  for (let r = 0; r < rounds; r++) {
    for (const y of subjects) {
      const { perSecond, refused } = drive(y.x, keys, roundMs);
      y.rounds.push(perSecond);
      y.refused += refused;
    }
  }
  const result: Record<string, { rounds: number[]; refused: number; inserts?: number }> = {};
  for (const y of subjects) {
    result[y.s.id] = {
      rounds: y.rounds,
      refused: y.refused,
      ...(y.x.held === undefined ? {} : { inserts: inserts(y.x, keys) }),
    };
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

if (process.argv[1]?.endsWith('returning.ts')) await main();

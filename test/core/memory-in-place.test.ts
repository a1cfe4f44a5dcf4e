/**
 * The memory store writes the state of fixed windows, sliding window logs and counters, GCRA,
 * leaky bucket queues and continuous token buckets into the cells it owns (`memory-in-place.ts`) instead of storing the new state
 * and transition each pure step makes. On random traces it must give what the pure steps give
 * over a plain `Map`: the same decisions, and after every call the same state. Replayed
 * (client-supplied) times go backwards at times, the case the log's in-place step leaves to the
 * pure step, as a strict bucket's refusal; refunds and charges write the pure steps' states,
 * which later checks then update in place.
 */
import {
  type Algorithm,
  type Decision,
  fixedWindow,
  gcra,
  type LimitCall,
  Limiter,
  leakyBucketQueue,
  MemoryStore,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import { chargeStep, UNCHANGED } from '@sluice/core/adapter';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fields } from './helpers.js';

const START = 1_800_000_000_000;

const ALGORITHMS: readonly Algorithm[] = [
  fixedWindow({ limit: 4, window: 1000 }),
  fixedWindow({ limit: 1, window: 250 }),
  slidingWindowLog({ limit: 4, window: 1500 }),
  slidingWindowLog({ limit: 7, window: 40 }),
  slidingWindowCounter({ limit: 4, window: 1000 }),
  slidingWindowCounter({ limit: 6, window: 1200, precision: 4 }),
  gcra({ rate: 3, period: 1500, burst: 4 }),
  leakyBucketQueue({ rate: 4, period: 1000, burst: 2, queue: 3 }),
  leakyBucketQueue({ rate: 2, period: 1000, burst: 1, maxDelay: 1500 }),
  tokenBucket({ capacity: 5, refillInterval: 2000 }),
  // A strict bucket's refusal restarts its clock: left to the pure step.
  tokenBucket({ capacity: 4, refillInterval: 1000, strict: true }),
];

const step = fc.record({
  op: fc.oneof(
    { arbitrary: fc.constant('check' as const), weight: 12 },
    { arbitrary: fc.constant('peek' as const), weight: 2 },
    { arbitrary: fc.constant('refund' as const), weight: 2 },
    { arbitrary: fc.constant('charge' as const), weight: 1 },
    { arbitrary: fc.constant('reset' as const), weight: 1 },
  ),
  algorithm: fc.nat(ALGORITHMS.length - 1),
  key: fc.constantFrom('a', 'b'),
  cost: fc.oneof(
    { arbitrary: fc.constant(1), weight: 5 },
    { arbitrary: fc.integer({ min: 1, max: 8 }), weight: 1 },
  ),
  // Mostly the same or a near millisecond (entries that share a millisecond, windows that fill
  // up), sometimes a fraction of one, a window later, or back in time (a replay).
  gap: fc.oneof(
    { arbitrary: fc.constant(0), weight: 8 },
    { arbitrary: fc.integer({ min: 0, max: 60 }), weight: 8 },
    { arbitrary: fc.double({ min: 0, max: 3, noNaN: true }), weight: 2 },
    { arbitrary: fc.integer({ min: 0, max: 3000 }), weight: 2 },
    { arbitrary: fc.integer({ min: -80, max: -1 }), weight: 2 },
  ),
});

/** The fields of a decision and of each of its `limits`, as a user reads them. */
const seen = (d: Decision) => ({ ...fields(d), limits: d.limits.map(fields) });

describe('MemoryStore in place (fixed window, sliding window log, GCRA, token bucket) = the pure steps over a Map', () => {
  it('random traces of check, peek, refund, charge and reset, with replayed times', () => {
    let inPlace = 0;
    let refused = 0;
    let replayed = 0;
    let reclaimed = 0;
    fc.assert(
      fc.property(fc.array(step, { minLength: 20, maxLength: 150 }), (trace) => {
        let now = START;
        let latest = now;
        const store = new MemoryStore();
        const limiters = ALGORITHMS.map((algorithm) => new Limiter({ algorithm, store }));
        const pure = new Map<string, unknown>();
        for (const { op, algorithm: index, key, cost, gap } of trace) {
          now += gap;
          if (gap < 0) replayed++;
          const algorithm = ALGORITHMS[index]!;
          const name = `${index}/${key}`;
          const call: LimitCall = { algorithm, key, cost, policy: algorithm.kind };
          const state = pure.get(name);
          if (op === 'check') {
            const expected = algorithm.consume(state as never, now, cost, algorithm.kind);
            const decision = limiters[index]!.checkSync(key, { now, cost }) as Decision;
            expect(seen(decision)).toEqual({
              ...fields(expected.decision),
              limits: [fields(expected.decision)],
            });
            if (expected.state === undefined) pure.delete(name);
            else pure.set(name, expected.state);
            if (state !== undefined) inPlace++;
            if (!decision.allowed) refused++;
          } else if (op === 'peek') {
            const expected = algorithm.peek(state as never, now, cost, algorithm.kind);
            expect(seen(limiters[index]!.peekSync(key, { now, cost }) as Decision)).toEqual({
              ...fields(expected),
              limits: [fields(expected)],
            });
          } else if (op === 'refund') {
            store.refund([call], now);
            if (state !== undefined) {
              const next = algorithm.refund!(state as never, now, cost);
              if (next === undefined) pure.delete(name);
              else pure.set(name, next);
            }
          } else if (op === 'charge') {
            const { state: next, taken } = chargeStep(call, state, now);
            expect(store.charge([call], now)).toEqual([taken]);
            if (next === undefined) pure.delete(name);
            else if (next !== UNCHANGED) pure.set(name, next);
          } else {
            store.reset([call]);
            pure.delete(name);
          }
          latest = Math.max(latest, now);
          // Every key's state, not only the one this call wrote. A new key may reclaim a state
          // that has expired (it answers as no state): the Map keeps it, the store need not.
          for (let i = 0; i < ALGORITHMS.length; i++) {
            for (const k of ['a', 'b']) {
              const stored = store.inspect(ALGORITHMS[i]!, k);
              const expected = pure.get(`${i}/${k}`);
              if (
                stored === undefined &&
                expected !== undefined &&
                ALGORITHMS[i]!.ttl(expected, latest) <= 0
              ) {
                pure.delete(`${i}/${k}`);
                reclaimed++;
              } else {
                expect(stored).toEqual(expected);
              }
            }
          }
        }
      }),
      // Seeded: the coverage figures below are facts about these traces.
      { numRuns: 150, seed: 20_261_127 },
    );
    // The traces reached the in-place steps, their refusals and the replays the log leaves to the pure step.
    expect(inPlace).toBeGreaterThan(1000);
    expect(refused).toBeGreaterThan(300);
    expect(replayed).toBeGreaterThan(100);
    expect(reclaimed).toBeGreaterThan(0);
  });

  it('inspect answers a copy: a state read earlier does not change under later checks', () => {
    const algorithm = fixedWindow({ limit: 10, window: 1000 });
    const store = new MemoryStore();
    const limiter = new Limiter({ algorithm, store });
    limiter.checkSync('k', { now: START });
    const before = store.inspect(algorithm, 'k');
    limiter.checkSync('k', { now: START + 1 });
    expect(before).toEqual([1, START]);
    expect(store.inspect(algorithm, 'k')).toEqual([2, START]);
  });

  it('a sliding window log counted in place keeps the store’s byte total exact as it grows and empties', () => {
    const algorithm = slidingWindowLog({ limit: 100, window: 10 });
    const store = new MemoryStore();
    const limiter = new Limiter({ algorithm, store });
    for (let t = 0; t < 25; t++) {
      limiter.checkSync('k', { now: START + t });
      const state = store.inspect(algorithm, 'k');
      expect(store.bytes).toBe(MemoryStore.bytesOf('k', state));
    }
    // Ten live milliseconds in a 10 ms window: ten entries.
    expect((store.inspect(algorithm, 'k') as number[]).length).toBe(20);
  });
});

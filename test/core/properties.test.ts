import {
  type Algorithm,
  type Decision,
  fixedWindow,
  gcra,
  Limiter,
  leakyBucketQueue,
  MemoryStore,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import { EPSILON } from '@sluice/core/adapter';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const RUNS = 300;
const SEED = 20_261_122;
const settings = { numRuns: RUNS, seed: SEED };

interface Subject {
  readonly label: string;
  readonly algorithm: Algorithm;
  /** A strict token bucket writes its refusals (the refill clock restarts). */
  readonly strict: boolean;
}

const size = fc.integer({ min: 1, max: 20 });
const span = fc.integer({ min: 1, max: 5000 });

const tokenBuckets = fc
  .record({
    capacity: size,
    refillAmount: size,
    refillInterval: span,
    refill: fc.constantFrom('continuous' as const, 'stepped' as const),
    strict: fc.boolean(),
  })
  .map((o) => ({ label: `tokenBucket(${JSON.stringify(o)})`, algorithm: tokenBucket(o), strict: o.strict }));
const gcras = fc
  .record({ rate: fc.integer({ min: 1, max: 30 }), period: span, burst: size })
  .map((o) => ({ label: `gcra(${JSON.stringify(o)})`, algorithm: gcra(o), strict: false }));
const fixedWindows = fc
  .record({ limit: size, window: span })
  .map((o) => ({ label: `fixedWindow(${JSON.stringify(o)})`, algorithm: fixedWindow(o), strict: false }));
const logs = fc.record({ limit: size, window: span }).map((o) => ({
  label: `slidingWindowLog(${JSON.stringify(o)})`,
  algorithm: slidingWindowLog(o),
  strict: false,
}));
const counters = fc
  .record({ limit: size, window: span, precision: fc.integer({ min: 1, max: 20 }) })
  .map((o) => ({
    label: `slidingWindowCounter(${JSON.stringify(o)})`,
    algorithm: slidingWindowCounter(o),
    strict: false,
  }));
const queues = fc
  .record({
    rate: size,
    period: span,
    burst: fc.integer({ min: 1, max: 5 }),
    queue: fc.integer({ min: 0, max: 10 }),
    maxDelay: fc.option(span, { nil: undefined }),
  })
  .map(({ maxDelay, ...o }) => {
    const options = maxDelay === undefined ? o : { ...o, maxDelay };
    return {
      label: `leakyBucketQueue(${JSON.stringify(options)})`,
      algorithm: leakyBucketQueue(options),
      strict: false,
    };
  });

const EXACT_RETRY: readonly fc.Arbitrary<Subject>[] = [tokenBuckets, gcras, fixedWindows, logs, queues];
const everyAlgorithm: fc.Arbitrary<Subject> = fc.oneof(...EXACT_RETRY, counters);

/** A random instant from 2020 to 2033: float rounding as in production. */
const base = fc.integer({ min: 1_600_000_000_000, max: 2_000_000_000_000 });
/** Requests: time since the previous one (often 0, often small, sometimes long) and a cost. */
const trace = (maxCost: number) =>
  fc.array(
    fc.record({
      dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 6000 })),
      cost: fc.integer({ min: 1, max: maxCost }),
    }),
    { minLength: 1, maxLength: 80 },
  );

interface Step {
  readonly now: number;
  readonly cost: number;
  readonly before: unknown;
  readonly after: unknown;
  readonly decision: Decision;
}

/** Replays a trace on the pure algorithm, threading the state as a store would. */
function replay(
  algorithm: Algorithm,
  start: number,
  requests: readonly { dt: number; cost: number }[],
): Step[] {
  const steps: Step[] = [];
  let state: unknown;
  let now = start;
  for (const { dt, cost } of requests) {
    now += dt;
    const { state: after, decision } = algorithm.consume(state, now, cost, 'p');
    steps.push({ now, cost, before: state, after, decision });
    state = after;
  }
  return steps;
}

/** Subject, start and a trace whose costs go a little past the subject's limit. */
const scenario = (subjects: fc.Arbitrary<Subject>) =>
  subjects.chain((subject) => fc.tuple(fc.constant(subject), base, trace(subject.algorithm.limit + 2)));

describe('properties of every algorithm (fast-check, seeded)', () => {
  it('decisions are well formed: whole ms, remaining within [0, limit], -1 only for a cost above the limit', () => {
    fc.assert(
      fc.property(scenario(everyAlgorithm), ([subject, start, requests]) => {
        for (const { decision: d, cost } of replay(subject.algorithm, start, requests)) {
          const where = `${subject.label} ${JSON.stringify(d)}`;
          expect(Number.isInteger(d.remaining) && d.remaining >= 0 && d.remaining <= d.limit, where).toBe(
            true,
          );
          expect(d.limit, where).toBe(subject.algorithm.limit);
          expect(Number.isInteger(d.resetAfter) && d.resetAfter >= 0, where).toBe(true);
          expect(Number.isInteger(d.delay) && d.delay >= 0, where).toBe(true);
          expect(Number.isInteger(d.retryAfter), where).toBe(true);
          if (d.allowed) {
            expect(d.retryAfter, where).toBe(0);
            expect(d.reason, where).toBeUndefined();
            expect(d.remaining, where).toBeLessThanOrEqual(d.limit - (d.delay > 0 ? 1 : 0));
          } else if (cost > subject.algorithm.limit) {
            expect([d.retryAfter, d.reason], where).toEqual([-1, 'cost-exceeds-limit']);
          } else {
            expect(d.retryAfter, where).toBeGreaterThanOrEqual(1);
            expect(d.reason, where).toBe('rate-limited');
            expect(d.delay, where).toBe(0);
          }
        }
      }),
      settings,
    );
  });

  it('a refused request consumes nothing: the state is unchanged (a strict token bucket only restarts its clock)', () => {
    fc.assert(
      fc.property(scenario(everyAlgorithm), ([subject, start, requests]) => {
        for (const step of replay(subject.algorithm, start, requests)) {
          if (step.decision.allowed) continue;
          if (subject.strict && step.decision.reason === 'rate-limited') continue;
          expect(step.after, subject.label).toBe(step.before);
        }
      }),
      settings,
    );
  });

  it('a strict token bucket that refuses keeps its whole tokens (it only drops the progress toward the next)', () => {
    const strictBuckets = tokenBuckets.filter((s) => s.strict);
    fc.assert(
      fc.property(scenario(strictBuckets), ([subject, start, requests]) => {
        for (const step of replay(subject.algorithm, start, requests)) {
          if (step.decision.allowed || step.decision.reason !== 'rate-limited') continue;
          const before = subject.algorithm.peek(step.before, step.now, 1, 'p');
          const after = subject.algorithm.peek(step.after, step.now, 1, 'p');
          expect(after.remaining, subject.label).toBe(before.remaining);
        }
      }),
      settings,
    );
  });

  for (const [name, subjects] of [
    ['token bucket', tokenBuckets],
    ['gcra', gcras],
    ['fixed window', fixedWindows],
    ['sliding window log', logs],
    ['leaky bucket queue', queues],
    ['sliding window counter', counters],
  ] as const) {
    it(`${name}: retryAfter is exact: the same request is admitted retryAfter ms later, refused 1 ms sooner`, () => {
      fc.assert(
        fc.property(scenario(subjects), ([subject, start, requests]) => {
          for (const step of replay(subject.algorithm, start, requests)) {
            const { retryAfter } = step.decision;
            if (step.decision.allowed || retryAfter < 1) continue;
            const at = (ms: number) =>
              subject.algorithm.consume(step.after, step.now + ms, step.cost, 'p').decision;
            const where = `${subject.label} at ${step.now}, cost ${step.cost}, retryAfter ${retryAfter}`;
            expect(at(retryAfter).allowed, where).toBe(true);
            expect(at(retryAfter - 1).allowed, where).toBe(false);
          }
        }),
        settings,
      );
    });
  }

  it('sliding window log: never more than limit admitted in any window [a, a + window)', () => {
    fc.assert(
      fc.property(scenario(logs), ([subject, start, requests]) => {
        const { limit, window } = subject.algorithm.params as { limit: number; window: number };
        const admitted = replay(subject.algorithm, start, requests).filter((s) => s.decision.allowed);
        // The fullest window [a, a + window) ends just after one of the admissions.
        for (const last of admitted) {
          const inWindow = admitted.filter((s) => s.now > last.now - window && s.now <= last.now);
          expect(
            inWindow.reduce((sum, s) => sum + s.cost, 0),
            subject.label,
          ).toBeLessThanOrEqual(limit);
        }
      }),
      settings,
    );
  });

  it('sliding window counter: at each admission, the exact trailing count ≤ limit + the oldest sub-window, and ≤ 2 × limit', () => {
    fc.assert(
      fc.property(scenario(counters), ([subject, start, requests]) => {
        const { limit, window, precision } = subject.algorithm.params as {
          limit: number;
          window: number;
          precision: number;
        };
        const sub = window / precision;
        const index = (t: number) => Math.floor((t + EPSILON) / sub);
        const admitted = replay(subject.algorithm, start, requests).filter((s) => s.decision.allowed);
        for (const last of admitted) {
          const exact = admitted
            .filter((s) => s.now > last.now - window && s.now <= last.now)
            .reduce((sum, s) => sum + s.cost, 0);
          const oldest = admitted
            .filter((s) => s.now <= last.now && index(s.now) === index(last.now) - precision)
            .reduce((sum, s) => sum + s.cost, 0);
          expect(exact, subject.label).toBeLessThanOrEqual(limit + oldest);
          expect(exact, subject.label).toBeLessThanOrEqual(2 * limit);
        }
      }),
      settings,
    );
  });

  it('token bucket: a full bucket after any history admits exactly its capacity', () => {
    fc.assert(
      fc.property(scenario(tokenBuckets), ([subject, start, requests]) => {
        const steps = replay(subject.algorithm, start, requests);
        const last = steps[steps.length - 1]!;
        const later = last.now + subject.algorithm.window + subject.algorithm.params.refillInterval! + 1;
        const capacity = subject.algorithm.limit;
        expect(subject.algorithm.peek(last.after, later, 1, 'p').remaining, subject.label).toBe(capacity);
        expect(subject.algorithm.consume(last.after, later, capacity, 'p').decision.allowed).toBe(true);
      }),
      settings,
    );
  });
});

describe('properties through the memory store (fast-check, seeded)', () => {
  it('peek never changes the stored state', () => {
    fc.assert(
      fc.property(
        scenario(everyAlgorithm),
        fc.array(fc.integer({ min: 1, max: 25 }), { minLength: 1, maxLength: 5 }),
        ([subject, start, requests], peekCosts) => {
          const store = new MemoryStore();
          const limiter = new Limiter({ algorithm: subject.algorithm, store });
          let now = start;
          for (const { dt, cost } of requests) {
            now += dt;
            const before = store.inspect(subject.algorithm, 'k');
            const keys = store.keyCount;
            for (const peekCost of peekCosts) limiter.peekSync('k', { now, cost: peekCost });
            limiter.peekSync('k', { now: now + 10_000, cost });
            // Equal, not the same array: `inspect` answers a copy (the store updates some states in place).
            expect(store.inspect(subject.algorithm, 'k'), subject.label).toEqual(before);
            expect(store.keyCount).toBe(keys);
            limiter.checkSync('k', { now, cost });
          }
        },
      ),
      settings,
    );
  });

  it('layered limits never consume when one refuses, on one key or on several', () => {
    const limits = fc.uniqueArray(everyAlgorithm, {
      minLength: 2,
      maxLength: 3,
      selector: (s) => s.algorithm.fingerprint,
    });
    fc.assert(
      fc.property(
        limits,
        base,
        fc.array(
          fc.record({
            dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 3000 })),
            cost: fc.integer({ min: 1, max: 8 }),
            keys: fc.array(fc.constantFrom('a', 'b', undefined), { minLength: 3, maxLength: 3 }),
          }),
          { minLength: 1, maxLength: 60 },
        ),
        (subjects, start, requests) => {
          const store = new MemoryStore();
          const limiter = new Limiter({
            store,
            limits: subjects.map((s, i) => ({ name: `l${i}`, algorithm: s.algorithm })),
          });
          let now = start;
          for (const { dt, cost, keys } of requests) {
            now += dt;
            const perLimit = keys.slice(0, subjects.length);
            const before = subjects.map((s, i) => store.inspect(s.algorithm, perLimit[i] ?? ''));
            const decision = limiter.checkSync(perLimit, { now, cost }) as Decision;
            if (decision.allowed) continue;
            const checked = subjects.filter((_, i) => perLimit[i] !== undefined);
            expect(decision.limits).toHaveLength(checked.length);
            subjects.forEach((s, i) => {
              const key = perLimit[i];
              if (key === undefined) return;
              const own = decision.limits[checked.indexOf(s)]!;
              if (s.strict && !own.allowed && own.reason === 'rate-limited') return;
              expect(store.inspect(s.algorithm, key), `${s.label} on ${key}`).toBe(before[i]);
            });
          }
        },
      ),
      settings,
    );
  });
});

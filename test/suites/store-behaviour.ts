import {
  type Algorithm,
  type Decision,
  fixedWindow,
  gcra,
  Limiter,
  type LimitKeys,
  leakyBucketQueue,
  type Store,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  algorithmsAtEveryScale,
  expectHonestRefusals,
  requestsAtEveryScale,
  startAnywhere,
} from './scales.js';

/** The fields of a decision that a store must reproduce exactly (everything but `limits`). */
export type DecisionFields = Pick<
  Decision,
  'allowed' | 'limit' | 'remaining' | 'resetAfter' | 'retryAfter' | 'delay' | 'policy' | 'reason'
>;

export interface StoreBehaviourOptions {
  /**
   * The instant the suite's timelines start at, ms since the epoch. Must be a multiple of one hour
   * so that fixed and sliding windows start at a boundary.
   * @default the next whole hour after the wall clock (realistic magnitudes, so float noise shows)
   */
  baseTime?: number;
  /** Call `store.shutdown()` after the suite. @default true */
  shutdown?: boolean;
  /**
   * For a store that serves some algorithms only (`SyncedStore`): a test whose store call throws
   * `ERR_SLUICE_UNSUPPORTED` is reported as skipped instead of failed. @default false
   */
  skipUnsupported?: boolean;
}

const vitestIt = it;

/** `it`, skipping a test that the store refuses with `ERR_SLUICE_UNSUPPORTED` (see the option). */
function skippingUnsupported(name: string, fn: () => Promise<void>): void {
  vitestIt(name, async (context) => {
    try {
      await fn();
    } catch (error) {
      if ((error as { code?: string } | null)?.code !== 'ERR_SLUICE_UNSUPPORTED') throw error;
      context.skip();
    }
  });
}

export function fields(decision: Decision): DecisionFields {
  const { allowed, limit, remaining, resetAfter, retryAfter, delay, policy, reason } = decision;
  return { allowed, limit, remaining, resetAfter, retryAfter, delay, policy, reason };
}

export function allow(
  limit: number,
  remaining: number,
  resetAfter: number,
  policy: string,
  delay = 0,
): DecisionFields {
  return { allowed: true, limit, remaining, resetAfter, retryAfter: 0, delay, policy, reason: undefined };
}

export function refuse(
  limit: number,
  remaining: number,
  resetAfter: number,
  retryAfter: number,
  policy: string,
  reason: Decision['reason'] = 'rate-limited',
): DecisionFields {
  return { allowed: false, limit, remaining, resetAfter, retryAfter, delay: 0, policy, reason };
}

/** One request of a timeline: ms after the base time, cost, and the exact decision expected. */
type Step = readonly [at: number, cost: number, expected: DecisionFields];

const HOUR = 3_600_000;

/** Every built-in algorithm, small, for the tests that apply to all of them. */
const EVERY_ALGORITHM: readonly (readonly [string, () => Algorithm])[] = [
  ['token bucket', () => tokenBucket({ capacity: 4, refillInterval: 4000 })],
  ['stepped token bucket', () => tokenBucket({ capacity: 4, refillInterval: 1000, refill: 'stepped' })],
  ['strict token bucket', () => tokenBucket({ capacity: 4, refillInterval: 4000, strict: true })],
  ['gcra', () => gcra({ rate: 4, period: 4000, burst: 4 })],
  ['fixed window', () => fixedWindow({ limit: 4, window: 1000 })],
  ['sliding window log', () => slidingWindowLog({ limit: 4, window: 1000 })],
  ['sliding window counter', () => slidingWindowCounter({ limit: 4, window: 1000 })],
  [
    'sliding window counter, precision 10',
    () => slidingWindowCounter({ limit: 4, window: 1000, precision: 10 }),
  ],
  ['leaky bucket queue', () => leakyBucketQueue({ rate: 1, period: 1000, burst: 2, queue: 2 })],
];

/**
 * The behaviour every `Store` must show through `Limiter`: exact decisions for every algorithm,
 * layered all-or-nothing, peek without effect, reset, keys that never collide, parameters that
 * never share state. Times are explicit (`now`), results are awaited (sync and async stores), and
 * every test uses its own random key prefix, so one shared server can run the suite repeatedly.
 */
export function describeStoreBehaviour(
  name: string,
  makeStore: () => Store | Promise<Store>,
  options: StoreBehaviourOptions = {},
): void {
  const it = options.skipUnsupported ? skippingUnsupported : vitestIt;
  describe(`store behaviour: ${name}`, () => {
    let store: Store;
    const t0 = options.baseTime ?? Math.ceil(Date.now() / HOUR) * HOUR + HOUR;
    const run = Math.random().toString(36).slice(2, 10);
    let serial = 0;
    /** A key no other test (or earlier run on a shared server) has used. */
    const freshKey = (label: string) => `sluice-test:${run}:${++serial}:${label}`;

    beforeAll(async () => {
      if (t0 % HOUR !== 0) throw new Error(`baseTime must be a multiple of one hour; got ${t0}`);
      store = await makeStore();
    });
    afterAll(async () => {
      if (options.shutdown ?? true) await store?.shutdown();
    });

    const limiterOf = (algorithm: Algorithm) => new Limiter({ algorithm, store });
    const check = async (limiter: Limiter, keys: LimitKeys, at: number, cost = 1) =>
      fields(await limiter.check(keys, { now: t0 + at, cost }));
    const peek = async (limiter: Limiter, keys: LimitKeys, at: number, cost = 1) =>
      fields(await limiter.peek(keys, { now: t0 + at, cost }));

    /** Runs a timeline on a fresh key and compares every decision, naming the step that differs. */
    const timeline = async (algorithm: Algorithm, steps: readonly Step[]) => {
      const limiter = limiterOf(algorithm);
      const key = freshKey(algorithm.kind);
      for (const [i, [at, cost, expected]] of steps.entries()) {
        expect(await check(limiter, key, at, cost), `step ${i}: +${at} ms, cost ${cost}`).toEqual(expected);
      }
    };

    describe('every algorithm: exact decisions', () => {
      it('token bucket (continuous): burst, refusal, partial refill', async () => {
        const p = 'token-bucket'; // 3 tokens, one back every 1000 ms
        await timeline(tokenBucket({ capacity: 3, refillInterval: 3000 }), [
          [0, 1, allow(3, 2, 1000, p)],
          [0, 1, allow(3, 1, 2000, p)],
          [0, 1, allow(3, 0, 3000, p)],
          [0, 1, refuse(3, 0, 3000, 1000, p)],
          [999, 1, refuse(3, 0, 2001, 1, p)],
          [1000, 1, allow(3, 0, 3000, p)],
          [2500, 2, refuse(3, 1, 1500, 500, p)],
          [3000, 2, allow(3, 0, 3000, p)],
        ]);
      });

      it('token bucket (stepped): whole refills, progress kept between them', async () => {
        const p = 'token-bucket'; // 5 tokens, 2 back every 1000 ms
        await timeline(
          tokenBucket({ capacity: 5, refillAmount: 2, refillInterval: 1000, refill: 'stepped' }),
          [
            [0, 5, allow(5, 0, 3000, p)],
            [999, 1, refuse(5, 0, 2001, 1, p)],
            [1000, 1, allow(5, 1, 2000, p)],
            [1500, 2, refuse(5, 1, 1500, 500, p)],
            [2000, 2, allow(5, 1, 2000, p)],
            // The refill clock still ticks from +2000: the next 2 tokens arrive at +3000, not +3999.
            [3999, 1, allow(5, 2, 1001, p)],
            [4000, 4, allow(5, 0, 3000, p)],
          ],
        );
      });

      it("regression: token bucket (stepped) keeps the progress of a full bucket toward the next refill (Smyte's reduce)", async () => {
        const p = 'token-bucket'; // issue 11 (3.6): check at t, 5 at t + 1500, one at t + 2000
        await timeline(
          tokenBucket({ capacity: 5, refillAmount: 2, refillInterval: 1000, refill: 'stepped' }),
          [
            [0, 1, allow(5, 4, 1000, p)],
            [1500, 1, allow(5, 4, 500, p)],
            [1500, 1, allow(5, 3, 500, p)],
            [1500, 1, allow(5, 2, 1500, p)],
            [1500, 1, allow(5, 1, 1500, p)],
            [1500, 1, allow(5, 0, 2500, p)],
            [2000, 1, allow(5, 1, 2000, p)],
          ],
        );
      });

      it('strict token bucket (continuous): sending while empty keeps a caller blocked', async () => {
        const p = 'token-bucket'; // 2 tokens, one back every 1000 ms
        await timeline(tokenBucket({ capacity: 2, refillInterval: 2000, strict: true }), [
          [0, 1, allow(2, 1, 1000, p)],
          [0, 1, allow(2, 0, 2000, p)],
          [500, 1, refuse(2, 0, 2000, 1000, p)],
          // A lenient bucket would admit here (1.4 tokens): the refusal at +500 restarted the clock.
          [1400, 1, refuse(2, 0, 2000, 1000, p)],
          [2399, 1, refuse(2, 0, 2000, 1000, p)],
          // Paused one whole interval since the last refusal: admitted.
          [3399, 1, allow(2, 0, 2000, p)],
        ]);
      });

      it('strict token bucket (stepped): sending while empty keeps a caller blocked', async () => {
        const p = 'token-bucket';
        await timeline(tokenBucket({ capacity: 1, refillInterval: 1000, refill: 'stepped', strict: true }), [
          [0, 1, allow(1, 0, 1000, p)],
          [900, 1, refuse(1, 0, 1000, 1000, p)],
          [1800, 1, refuse(1, 0, 1000, 1000, p)],
          [2799, 1, refuse(1, 0, 1000, 1000, p)],
          [3799, 1, allow(1, 0, 1000, p)],
        ]);
      });

      it('gcra: burst, exact retryAfter and resetAfter, variable cost', async () => {
        const p = 'gcra'; // one per 1000 ms, bursts of 3 (redis-cell max_burst 2)
        await timeline(gcra({ rate: 1, period: 1000, burst: 3 }), [
          [0, 1, allow(3, 2, 1000, p)],
          [0, 1, allow(3, 1, 2000, p)],
          [0, 1, allow(3, 0, 3000, p)],
          [0, 1, refuse(3, 0, 3000, 1000, p)],
          [999, 1, refuse(3, 0, 2001, 1, p)],
          [1000, 1, allow(3, 0, 3000, p)],
          [3500, 2, allow(3, 0, 2500, p)],
          [3500, 1, refuse(3, 0, 2500, 500, p)],
        ]);
      });

      it("gcra: redis-cell README's CL.THROTTLE user123 15 30 60 1", async () => {
        // redis-cell answers 0 (allowed), 16 (limit), 15 (remaining), -1 (retry), 2 s (reset).
        await timeline(gcra({ rate: 30, period: '60s', burst: 16 }), [[0, 1, allow(16, 15, 2000, 'gcra')]]);
      });

      it('fixed window: counts per epoch-aligned window', async () => {
        const p = 'fixed-window';
        await timeline(fixedWindow({ limit: 2, window: 1000 }), [
          [0, 1, allow(2, 1, 1000, p)],
          [500, 1, allow(2, 0, 500, p)],
          [999, 1, refuse(2, 0, 1, 1, p)],
          [1000, 1, allow(2, 1, 1000, p)],
          [1000, 2, refuse(2, 1, 1000, 1000, p)],
        ]);
      });

      it('sliding window log: exact trailing window', async () => {
        const p = 'sliding-window-log';
        await timeline(slidingWindowLog({ limit: 2, window: 1000 }), [
          [0, 1, allow(2, 1, 1000, p)],
          [400, 1, allow(2, 0, 1000, p)],
          [999, 1, refuse(2, 0, 401, 1, p)],
          [1000, 1, allow(2, 0, 1000, p)],
          [1399, 1, refuse(2, 0, 601, 1, p)],
          [1400, 2, refuse(2, 1, 600, 600, p)],
        ]);
      });

      it('sliding window counter: weighted previous window', async () => {
        const p = 'sliding-window-counter';
        await timeline(slidingWindowCounter({ limit: 10, window: 1000 }), [
          [500, 10, allow(10, 0, 1500, p)],
          // 10 in the current window: wait 1 ms for the next, then 100 ms for the weight to fall to 9.
          [999, 1, refuse(10, 0, 1001, 101, p)],
          [1099, 1, refuse(10, 0, 901, 1, p)],
          [1100, 1, allow(10, 0, 1900, p)],
        ]);
      });

      it('leaky bucket queue: delays 0, 1, 2 intervals, then refusal', async () => {
        const p = 'leaky-bucket-queue'; // one per 1000 ms, 2 may wait
        await timeline(leakyBucketQueue({ rate: 1, period: 1000, queue: 2 }), [
          [0, 1, allow(3, 2, 1000, p, 0)],
          [0, 1, allow(3, 1, 2000, p, 1000)],
          [0, 1, allow(3, 0, 3000, p, 2000)],
          [0, 1, refuse(3, 0, 3000, 1000, p)],
          [999, 1, refuse(3, 0, 2001, 1, p)],
          [1000, 1, allow(3, 0, 3000, p, 2000)],
        ]);
      });
    });

    describe('every algorithm: cost', () => {
      for (const [label, make] of EVERY_ALGORITHM) {
        it(`${label}: a cost above the limit is refused for good and consumes nothing`, async () => {
          const algorithm = make();
          const limiter = limiterOf(algorithm);
          const key = freshKey('cost');
          const refused = await check(limiter, key, 0, algorithm.limit + 1);
          expect(refused).toMatchObject({ allowed: false, retryAfter: -1, reason: 'cost-exceeds-limit' });
          expect(refused.limit).toBe(algorithm.limit);
          // Nothing was taken: the whole limit is still there.
          expect(await check(limiter, key, 0, algorithm.limit)).toMatchObject({
            allowed: true,
            remaining: 0,
          });
          expect(await check(limiter, key, 0, 1)).toMatchObject({ allowed: false, reason: 'rate-limited' });
        });

        it(`${label}: variable cost takes that many units`, async () => {
          const algorithm = make();
          const limiter = limiterOf(algorithm);
          const key = freshKey('variable');
          expect(await check(limiter, key, 0, 3)).toMatchObject({ allowed: true, remaining: 1 });
          const refused = await check(limiter, key, 0, 2);
          expect(refused).toMatchObject({ allowed: false, remaining: 1, reason: 'rate-limited' });
          expect(refused.retryAfter).toBeGreaterThan(0);
          expect(await check(limiter, key, 0, 1)).toMatchObject({ allowed: true, remaining: 0 });
        });
      }
    });

    describe('every algorithm: honest refusals', () => {
      it('regression: a token bucket refusing at a late time and a high rate said retryAfter 0 (issue 11, 3.4)', async () => {
        // Traces found against the unclamped arithmetic (both twins): the wait rounds to ≤ the slack.
        const cases: [Algorithm, number, number][] = [
          [
            tokenBucket({ capacity: 100_000, refillAmount: 1, refillInterval: 0.00414548188348134 }),
            2822653069602.3643,
            2822653069602.366,
          ],
          [
            tokenBucket({
              capacity: 100_000,
              refillAmount: 1,
              refillInterval: 0.0021860906641625465,
              refill: 'stepped',
            }),
            2315794579510.476,
            2315794579510.477,
          ],
        ];
        for (const [algorithm, emptied, then] of cases) {
          const limiter = limiterOf(algorithm);
          const key = freshKey('late');
          expect((await limiter.check(key, { now: emptied, cost: 100_000 })).allowed).toBe(true);
          const refused = await limiter.check(key, { now: then });
          expect(fields(refused), algorithm.kind).toMatchObject({ allowed: false, retryAfter: 1 });
          expect((await limiter.peek(key, { now: then + 1 })).allowed).toBe(true);
        }
      });

      it('regression: refused ⇒ retryAfter ≥ 1 or -1, at every scale and time accepted (a refusal said retryAfter 0)', async () => {
        // The same seeded scenarios on every store: the Lua twins round as the TypeScript does.
        const scenarios = fc.sample(fc.tuple(algorithmsAtEveryScale, startAnywhere, requestsAtEveryScale), {
          numRuns: 40,
          seed: 20_261_123,
        });
        for (const [algorithm, from, requests] of scenarios) {
          await expectHonestRefusals(limiterOf(algorithm), freshKey('scale'), from, requests);
        }
      });
    });

    describe('layered limits', () => {
      it('all-or-nothing on one key: a refusal by one limit consumes none', async () => {
        const limiter = new Limiter({
          store,
          limits: [
            { name: 'window', algorithm: fixedWindow({ limit: 5, window: 1000 }) },
            { name: 'bucket', algorithm: tokenBucket({ capacity: 2, refillInterval: 10_000 }) },
          ],
        });
        const key = freshKey('layered');
        expect(await check(limiter, key, 0)).toEqual(allow(2, 1, 5000, 'bucket'));
        expect(await check(limiter, key, 0)).toEqual(allow(2, 0, 10_000, 'bucket'));
        const refused = await limiter.check(key, { now: t0 });
        expect(fields(refused)).toEqual(refuse(2, 0, 10_000, 5000, 'bucket'));
        expect(refused.limits.map(fields)).toEqual([
          allow(5, 3, 1000, 'window'),
          refuse(2, 0, 10_000, 5000, 'bucket'),
        ]);
        // Ten more refusals later, the window still holds only the two admitted requests.
        for (let i = 0; i < 10; i++) await check(limiter, key, 100);
        const seen = await limiter.peek(key, { now: t0 + 100 });
        expect(seen.limits.map((d) => d.remaining)).toEqual([3, 0]);
      });

      it('all-or-nothing across keys: the per-IP limit is not consumed when the per-user one refuses', async () => {
        const user = gcra({ rate: 1, period: 1000, burst: 1 });
        const limiter = new Limiter({
          store,
          limits: [
            { name: 'ip', algorithm: slidingWindowLog({ limit: 3, window: 1000 }) },
            { name: 'user', algorithm: user },
          ],
        });
        const [ip, alice, bob, carol, dave] = ['ip', 'alice', 'bob', 'carol', 'dave'].map(freshKey) as [
          string,
          string,
          string,
          string,
          string,
        ];
        expect(await check(limiter, [ip, alice], 0)).toMatchObject({ allowed: true, policy: 'user' });
        expect(await check(limiter, [ip, alice], 0)).toMatchObject({ allowed: false, policy: 'user' });
        expect(await check(limiter, [ip, alice], 0)).toMatchObject({ allowed: false, policy: 'user' });
        // The two refusals did not count against the IP: two more users fit, then the IP is full.
        expect(await check(limiter, [ip, bob], 0)).toMatchObject({ allowed: true, remaining: 0 });
        expect(await check(limiter, [ip, carol], 0)).toMatchObject({
          allowed: true,
          policy: 'ip',
          remaining: 0,
        });
        const full = await limiter.check([ip, dave], { now: t0 });
        expect(fields(full)).toEqual(refuse(3, 0, 1000, 1000, 'ip'));
        expect(full.limits.map(fields)).toEqual([refuse(3, 0, 1000, 1000, 'ip'), allow(1, 1, 0, 'user')]);
        // dave's own limit was not consumed by the IP's refusal: alone, it still admits him.
        expect(await check(limiterOf(user), dave, 0)).toEqual(allow(1, 0, 1000, 'gcra'));
      });

      it("a refusal by one limit leaves another limit's key untouched even when it would have admitted", async () => {
        const user = gcra({ rate: 1, period: 1000, burst: 1 });
        const limiter = new Limiter({
          store,
          limits: [
            { name: 'ip', algorithm: fixedWindow({ limit: 1, window: 1000 }) },
            { name: 'user', algorithm: user },
          ],
        });
        const [ip, dave] = [freshKey('ip'), freshKey('dave')];
        expect(await check(limiter, [ip, freshKey('someone')], 0)).toMatchObject({ allowed: true });
        expect(await check(limiter, [ip, dave], 0)).toMatchObject({ allowed: false, policy: 'ip' });
        // dave's gcra was not consumed: a limiter on that limit alone still sees a full burst.
        expect(await check(limiterOf(user), dave, 0)).toEqual(allow(1, 0, 1000, 'gcra'));
      });

      it('an undefined per-limit key skips that limit', async () => {
        const limiter = new Limiter({
          store,
          limits: [
            { name: 'ip', algorithm: fixedWindow({ limit: 1, window: 1000 }) },
            { name: 'token', algorithm: fixedWindow({ limit: 5, window: 1000 }) },
          ],
        });
        const ip = freshKey('ip');
        const decision = await limiter.check([ip, undefined], { now: t0 });
        expect(fields(decision)).toEqual(allow(1, 0, 1000, 'ip'));
        expect(decision.limits).toHaveLength(1);
        expect(await check(limiter, [ip, undefined], 0)).toMatchObject({ allowed: false, policy: 'ip' });
        const none = await limiter.check([undefined, undefined], { now: t0 });
        expect(none).toMatchObject({ allowed: true, limits: [] });
      });

      it('a strict bucket that refuses restarts its own clock but consumes no other limit', async () => {
        const limiter = new Limiter({
          store,
          limits: [
            { name: 'window', algorithm: fixedWindow({ limit: 10, window: 10_000 }) },
            { name: 'strict', algorithm: tokenBucket({ capacity: 1, refillInterval: 1000, strict: true }) },
          ],
        });
        const key = freshKey('strict-layered');
        expect(await check(limiter, key, 0)).toMatchObject({ allowed: true });
        expect(await check(limiter, key, 900)).toMatchObject({ allowed: false, policy: 'strict' });
        // Restarted at +900, so still refused at +1000 (which restarts it again); admitted at +2000.
        expect(await check(limiter, key, 1000)).toMatchObject({ allowed: false, retryAfter: 1000 });
        expect(await check(limiter, key, 2000)).toMatchObject({ allowed: true });
        const seen = await limiter.peek(key, { now: t0 + 2000 });
        expect(seen.limits[0]).toMatchObject({ policy: 'window', remaining: 8 });
      });
    });

    describe('peek', () => {
      for (const [label, make] of EVERY_ALGORITHM) {
        it(`${label}: never changes state, and agrees with the check that follows`, async () => {
          const algorithm = make();
          const limiter = limiterOf(algorithm);
          const [peeked, plain] = [freshKey('peeked'), freshKey('plain')];
          for (const at of [0, 0, 0, 0, 0, 300, 300, 999, 1000, 1001, 1500, 2500, 2500, 2500, 4000]) {
            for (const cost of [2, algorithm.limit, algorithm.limit + 1])
              await peek(limiter, peeked, at, cost);
            const seen = await peek(limiter, peeked, at);
            const done = await check(limiter, peeked, at);
            // The same check on a key that was never peeked answers the same.
            expect(done, `check at +${at}`).toEqual(await check(limiter, plain, at));
            expect(seen.allowed, `peek at +${at}`).toBe(done.allowed);
            expect(seen.reason).toBe(done.reason);
            // A peek reports the units left before this request; the check, after it.
            if (done.allowed) expect(seen.remaining).toBe(done.remaining + 1);
          }
          for (const at of [4000, 4500, 6000]) {
            expect(await peek(limiter, peeked, at)).toEqual(await peek(limiter, plain, at));
          }
        });
      }
    });

    describe('reset', () => {
      for (const [label, make] of EVERY_ALGORITHM) {
        it(`${label}: forgets the key, and only that key`, async () => {
          const algorithm = make();
          const limiter = limiterOf(algorithm);
          const [key, other] = [freshKey('reset'), freshKey('kept')];
          await check(limiter, key, 0, algorithm.limit);
          await check(limiter, other, 0, algorithm.limit);
          expect(await check(limiter, key, 0)).toMatchObject({ allowed: false });
          await limiter.reset(key);
          const fresh = limiterOf(algorithm);
          expect(await check(limiter, key, 0)).toEqual(await check(fresh, freshKey('never-used'), 0));
          expect(await check(limiter, other, 0)).toMatchObject({ allowed: false });
        });
      }

      it('resets every limit of a layered limiter', async () => {
        const limiter = new Limiter({
          store,
          limits: [
            { name: 'a', algorithm: fixedWindow({ limit: 1, window: 1000 }) },
            { name: 'b', algorithm: slidingWindowLog({ limit: 1, window: 1000 }) },
          ],
        });
        const key = freshKey('layered-reset');
        await check(limiter, key, 0);
        await limiter.reset(key);
        const decision = await limiter.check(key, { now: t0 });
        expect(decision.limits.map((d) => [d.allowed, d.remaining])).toEqual([
          [true, 0],
          [true, 0],
        ]);
      });
    });

    describe('keys', () => {
      const awkward = [
        'a',
        'a{b}',
        '{a}',
        '{a}b',
        'a{}',
        '{}',
        '',
        ' ',
        'x\ny',
        'x',
        'y',
        'xy',
        'x\r\ny',
        'x\0y',
        'x\0',
        '\0',
        'x:y',
        'x|y',
        'x\\y',
        'x"y',
        "x'y",
        'é', // precomposed
        'e\u0301', // e + combining acute: the same text to a reader, a different key
        '😀',
        '鍵',
        'a'.repeat(1000),
        'a'.repeat(1001),
      ];

      for (const [label, make] of [
        ['fixed window', () => fixedWindow({ limit: 1, window: 10_000 })],
        ['sliding window log', () => slidingWindowLog({ limit: 1, window: 10_000 })],
        ['token bucket', () => tokenBucket({ capacity: 1, refillInterval: 10_000 })],
      ] as const) {
        it(`${label}: braces, newlines, NUL and unicode keys never collide`, async () => {
          const limiter = limiterOf(make());
          const prefix = freshKey('');
          for (const key of awkward) {
            expect(await check(limiter, prefix + key, 0), JSON.stringify(key)).toMatchObject({
              allowed: true,
            });
          }
          for (const key of awkward) {
            expect(await check(limiter, prefix + key, 1), JSON.stringify(key)).toMatchObject({
              allowed: false,
            });
          }
        });
      }

      it('lone surrogates (strings that are not valid UTF-16 text) never collide', async () => {
        const limiter = limiterOf(fixedWindow({ limit: 1, window: 10_000 }));
        const prefix = freshKey('');
        const keys = ['\ud83d', '\ud83e', '\udc00', '\ufffd', 'a\ud83d', 'a\ud83e'];
        for (const key of keys) {
          expect(await check(limiter, prefix + key, 0), JSON.stringify(key)).toMatchObject({ allowed: true });
        }
      });

      it('keys that are only braces or hash tags work in a layered limiter with per-limit keys', async () => {
        const limiter = new Limiter({
          store,
          limits: [
            { name: 'a', algorithm: fixedWindow({ limit: 1, window: 1000 }) },
            { name: 'b', algorithm: fixedWindow({ limit: 2, window: 1000 }) },
          ],
        });
        const prefix = freshKey('');
        expect(await check(limiter, [`${prefix}{x}`, `${prefix}{y}`], 0)).toMatchObject({ allowed: true });
        expect(await check(limiter, [`${prefix}{y}`, `${prefix}{x}`], 0)).toMatchObject({ allowed: true });
        const third = await limiter.check([`${prefix}{x}`, `${prefix}{x}`], { now: t0 });
        expect(third.limits.map((d) => d.allowed)).toEqual([false, true]);
      });
    });

    describe('parameters', () => {
      it('two limiters with different parameters on the same key never share state', async () => {
        const key = freshKey('shared');
        const one = limiterOf(fixedWindow({ limit: 1, window: 1000 }));
        const two = limiterOf(fixedWindow({ limit: 2, window: 1000 }));
        const longer = limiterOf(fixedWindow({ limit: 1, window: 2000 }));
        const log = limiterOf(slidingWindowLog({ limit: 1, window: 1000 }));
        expect(await check(one, key, 0)).toEqual(allow(1, 0, 1000, 'fixed-window'));
        expect(await check(two, key, 0)).toEqual(allow(2, 1, 1000, 'fixed-window'));
        expect(await check(longer, key, 0)).toEqual(allow(1, 0, 2000, 'fixed-window'));
        expect(await check(log, key, 0)).toEqual(allow(1, 0, 1000, 'sliding-window-log'));
        expect(await check(one, key, 0)).toMatchObject({ allowed: false });
      });

      it('a token bucket made lenient and one made strict do not share state', async () => {
        const key = freshKey('strictness');
        const lenient = limiterOf(tokenBucket({ capacity: 1, refillInterval: 1000 }));
        const strict = limiterOf(tokenBucket({ capacity: 1, refillInterval: 1000, strict: true }));
        expect(await check(lenient, key, 0)).toMatchObject({ allowed: true });
        expect(await check(strict, key, 0)).toMatchObject({ allowed: true });
      });

      it('regression: two limits with equal parameters but different names never share state; the same name does (issue 11)', async () => {
        // Core Limiter bound no name (the adapters did): login and reset-password, 1 per window
        // per IP each, shared one counter.
        const key = freshKey('named');
        const named = (name: string) =>
          new Limiter({ limits: [{ name, algorithm: fixedWindow({ limit: 1, window: 1000 }) }], store });
        const login = named('login');
        expect(await check(login, key, 0)).toEqual(allow(1, 0, 1000, 'login'));
        expect(await check(named('reset-password'), key, 0)).toEqual(allow(1, 0, 1000, 'reset-password'));
        expect(await check(named('login'), key, 0)).toMatchObject({ allowed: false, policy: 'login' });
        // An unnamed limit is named for its kind: it shares state with a limit named so.
        const unnamed = limiterOf(fixedWindow({ limit: 1, window: 1000 }));
        expect(await check(unnamed, key, 0)).toMatchObject({ allowed: true });
        expect(await check(named('fixed-window'), key, 0)).toMatchObject({ allowed: false });
      });

      it('two limiters with equal parameters share state (durations written either way)', async () => {
        const key = freshKey('same');
        const a = limiterOf(gcra({ rate: 2, period: 1000 }));
        const b = limiterOf(gcra({ rate: 2, period: '1s' }));
        expect(await check(a, key, 0)).toMatchObject({ allowed: true, remaining: 1 });
        expect(await check(b, key, 0)).toMatchObject({ allowed: true, remaining: 0 });
      });
    });
  });
}

// Type tests of @sluice/core's public API, as apps write it: checked by `pnpm test` (vitest's
// typecheck mode, project `types`) and `pnpm typecheck`; never run.
import {
  ConcurrencyLimiter,
  type Decision,
  type Duration,
  ErrorCode,
  fixedWindow,
  gcra,
  type Lease,
  Limiter,
  leakyBucketQueue,
  type MaybePromise,
  MemoryStore,
  SluiceError,
  type Store,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import { describe, expectTypeOf, test } from 'vitest';

describe('@sluice/core', () => {
  test('every algorithm factory takes its options and gives an Algorithm a Limiter takes', () => {
    const algorithms = [
      tokenBucket({ capacity: 10, refillAmount: 1, refillInterval: '1s' }),
      gcra({ rate: 10, period: '1s', burst: 5 }),
      fixedWindow({ limit: 100, window: '1m' }),
      slidingWindowLog({ limit: 100, window: 60_000 }),
      slidingWindowCounter({ limit: 100, window: '1 minute' }),
      leakyBucketQueue({ rate: 10, period: '1s', burst: 2 }),
    ];
    for (const algorithm of algorithms) new Limiter({ algorithm });
    // @ts-expect-error a window is a Duration: a number of ms or a string such as '1m'
    fixedWindow({ limit: 100, window: true });
    // @ts-expect-error `limit` is required
    fixedWindow({ window: '1m' });
    expectTypeOf<'1m'>().toMatchTypeOf<Duration>();
    expectTypeOf<60_000>().toMatchTypeOf<Duration>();
  });

  test('a check answers a promise of a Decision on every store; checkSync and peekSync a Decision', () => {
    const limiter = new Limiter({ algorithm: fixedWindow({ limit: 5, window: '1m' }) });
    expectTypeOf(limiter.check('user:1')).toEqualTypeOf<Promise<Decision>>();
    expectTypeOf(limiter.check(['ip:1', 'user:1'], { cost: 2, now: 0 })).toEqualTypeOf<Promise<Decision>>();
    expectTypeOf(limiter.peek('user:1')).toEqualTypeOf<Promise<Decision>>();
    expectTypeOf(limiter.checkSync('user:1')).toEqualTypeOf<Decision>();
    expectTypeOf(limiter.peekSync(['ip:1', 'user:1'], { now: 0 })).toEqualTypeOf<Decision>();
    expectTypeOf(limiter.reset('user:1')).toEqualTypeOf<MaybePromise<void>>();
    // @ts-expect-error a key is a string (or one per limit)
    limiter.check(42);
  });

  test('a Decision is read-only and says why it refused', () => {
    expectTypeOf<Decision>().toHaveProperty('allowed').toEqualTypeOf<boolean>();
    expectTypeOf<Decision>().toHaveProperty('remaining').toEqualTypeOf<number>();
    expectTypeOf<Decision>().toHaveProperty('retryAfter').toEqualTypeOf<number>();
    expectTypeOf<Decision>().toHaveProperty('policy').toEqualTypeOf<string>();
    const decision = {} as Decision;
    // @ts-expect-error a Decision is read-only
    decision.allowed = true;
  });

  test('layered limits, each named, share one store', () => {
    const store: Store = new MemoryStore({ maxKeys: 10_000 });
    new Limiter({
      limits: [
        { name: 'burst', algorithm: tokenBucket({ capacity: 10, refillAmount: 10, refillInterval: '1s' }) },
        { name: 'daily', algorithm: fixedWindow({ limit: 1_000, window: '1d' }) },
      ],
      store,
    });
    // @ts-expect-error `limits` or `algorithm`, not an unknown option
    new Limiter({ algorithm: fixedWindow({ limit: 1, window: '1s' }), limitz: [] });
  });

  test('a concurrency limit hands out leases to release', () => {
    const limiter = new ConcurrencyLimiter({ limit: 5, ttl: '2m' });
    expectTypeOf(limiter.acquire('token:abc')).toEqualTypeOf<MaybePromise<Lease>>();
    expectTypeOf<Lease['release']>().returns.toEqualTypeOf<MaybePromise<boolean>>();
    expectTypeOf<Lease>().toHaveProperty('decision').toEqualTypeOf<Decision>();
  });

  test('errors carry a stable code', () => {
    expectTypeOf<SluiceError>().toHaveProperty('code').toEqualTypeOf<ErrorCode>();
    expectTypeOf(ErrorCode.INVALID_OPTION).toBeString();
    expectTypeOf(new SluiceError(ErrorCode.INVALID_OPTION, 'x')).toMatchTypeOf<Error>();
  });
});

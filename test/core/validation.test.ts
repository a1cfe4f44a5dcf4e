import {
  ErrorCode,
  fixedWindow,
  gcra,
  Limiter,
  leakyBucketQueue,
  MemoryStore,
  SluiceError,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import { MAX_DURATION, parseDuration } from '@sluice/core/adapter';
import { describe, expect, it } from 'vitest';

/** Runs `make` and returns the SluiceError it throws (fails the test if it throws anything else). */
function thrown(make: () => unknown): SluiceError {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(SluiceError);
    return error as SluiceError;
  }
  throw new Error('expected a SluiceError, nothing was thrown');
}

/** The error names the option and shows the bad value. */
function expectCoded(make: () => unknown, code: string, option: string, shown?: string): void {
  const error = thrown(make);
  expect(error.code, error.message).toBe(code);
  expect(error.option).toBe(option);
  expect(error.message).toContain(option);
  if (shown !== undefined) expect(error.message).toContain(shown);
}

// Each factory with valid options and the option under test replaced by a bad value.
type Factory = (options: Record<string, unknown>) => unknown;
const factories: readonly [string, Factory, Record<string, unknown>][] = [
  ['tokenBucket', tokenBucket as unknown as Factory, { capacity: 10, refillInterval: 1000 }],
  ['gcra', gcra as unknown as Factory, { rate: 10, period: 1000 }],
  ['fixedWindow', fixedWindow as unknown as Factory, { limit: 10, window: 1000 }],
  ['slidingWindowLog', slidingWindowLog as unknown as Factory, { limit: 10, window: 1000 }],
  ['slidingWindowCounter', slidingWindowCounter as unknown as Factory, { limit: 10, window: 1000 }],
  ['leakyBucketQueue', leakyBucketQueue as unknown as Factory, { rate: 10, period: 1000, queue: 5 }],
];

const integers: Record<string, string[]> = {
  tokenBucket: ['capacity', 'refillAmount'],
  gcra: ['rate', 'burst'],
  fixedWindow: ['limit'],
  slidingWindowLog: ['limit'],
  slidingWindowCounter: ['limit', 'precision'],
  leakyBucketQueue: ['rate', 'burst'],
};
const durations: Record<string, string[]> = {
  tokenBucket: ['refillInterval'],
  gcra: ['period'],
  fixedWindow: ['window'],
  slidingWindowLog: ['window'],
  slidingWindowCounter: ['window'],
  leakyBucketQueue: ['period', 'maxDelay'],
};
const required: Record<string, string[]> = {
  tokenBucket: ['capacity', 'refillInterval'],
  gcra: ['rate', 'period'],
  fixedWindow: ['limit', 'window'],
  slidingWindowLog: ['limit', 'window'],
  slidingWindowCounter: ['limit', 'window'],
  leakyBucketQueue: ['rate', 'period'],
};

describe('algorithm options are validated at creation', () => {
  for (const [name, make, valid] of factories) {
    describe(name, () => {
      it('accepts its valid options', () => {
        expect(() => make(valid)).not.toThrow();
      });

      for (const option of integers[name]!) {
        // null is refused where the option is required; on an optional one it means "not set".
        const nullable = required[name]!.includes(option) ? [null] : [];
        for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '10', 2 ** 53, ...nullable]) {
          it(`${option}: ${String(bad)} is refused`, () => {
            expectCoded(
              () => make({ ...valid, [option]: bad }),
              ErrorCode.INVALID_OPTION,
              option,
              String(bad),
            );
          });
        }
      }

      for (const option of durations[name]!) {
        for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '0s']) {
          it(`${option}: ${String(bad)} is refused`, () => {
            expectCoded(
              () => make({ ...valid, [option]: bad }),
              ErrorCode.INVALID_OPTION,
              option,
              String(bad),
            );
          });
        }
        for (const bad of ['15 minuets', '1 hours ago', '-1s', '1y', '', 'ms', '1e3ms', 'minutes', {}]) {
          it(`${option}: ${JSON.stringify(bad)} is an unreadable duration`, () => {
            const shown = typeof bad === 'string' ? JSON.stringify(bad) : undefined;
            expectCoded(() => make({ ...valid, [option]: bad }), ErrorCode.INVALID_DURATION, option, shown);
          });
        }
      }

      for (const option of required[name]!) {
        it(`${option} is required`, () => {
          const { [option]: _, ...rest } = valid;
          expectCoded(() => make(rest), ErrorCode.MISSING_OPTION, option);
        });
      }

      it('an unknown option (a typo) is refused, and the accepted ones are listed', () => {
        const typo = `${Object.keys(valid)[0]!}s`;
        const error = thrown(() => make({ ...valid, [typo]: 1 }));
        expect(error.code).toBe(ErrorCode.UNKNOWN_OPTION);
        expect(error.option).toBe(typo);
        expect(error.message).toContain(typo);
        for (const known of Object.keys(valid)) expect(error.message).toContain(known);
      });

      it('options that are not an object are refused', () => {
        for (const bad of [undefined, null, 5, 'x']) {
          expect(thrown(() => make(bad as never)).code).toBe(ErrorCode.INVALID_OPTION);
        }
      });
    });
  }

  it('gcra: burst below 1 is refused (redis-cell max_burst 0 is sluice burst 1)', () => {
    expectCoded(() => gcra({ rate: 1, period: 1000, burst: 0 }), ErrorCode.INVALID_OPTION, 'burst', '0');
    expect(() => gcra({ rate: 1, period: 1000, burst: 1 })).not.toThrow();
  });

  it('tokenBucket: refill and strict accept only their values', () => {
    const valid = { capacity: 1, refillInterval: 1000 };
    expectCoded(
      () => tokenBucket({ ...valid, refill: 'smooth' as never }),
      ErrorCode.INVALID_OPTION,
      'refill',
      'smooth',
    );
    expectCoded(
      () => tokenBucket({ ...valid, strict: 'yes' as never }),
      ErrorCode.INVALID_OPTION,
      'strict',
      'yes',
    );
  });

  it('slidingWindowCounter: precision from 1 to 1000', () => {
    const valid = { limit: 1, window: 1000 };
    expectCoded(
      () => slidingWindowCounter({ ...valid, precision: 1001 }),
      ErrorCode.INVALID_OPTION,
      'precision',
      '1001',
    );
    expect(() => slidingWindowCounter({ ...valid, precision: 1000 })).not.toThrow();
  });

  it('leakyBucketQueue: needs queue or maxDelay; queue may be 0 but not negative or fractional', () => {
    expectCoded(() => leakyBucketQueue({ rate: 1, period: 1000 }), ErrorCode.MISSING_OPTION, 'queue');
    expect(() => leakyBucketQueue({ rate: 1, period: 1000, queue: 0 })).not.toThrow();
    for (const bad of [-1, 1.5, Number.NaN]) {
      expectCoded(
        () => leakyBucketQueue({ rate: 1, period: 1000, queue: bad }),
        ErrorCode.INVALID_OPTION,
        'queue',
      );
    }
  });

  it('durations: readable strings and milliseconds', () => {
    expect(parseDuration('d', 1500)).toBe(1500);
    expect(parseDuration('d', '500ms')).toBe(500);
    expect(parseDuration('d', '30s')).toBe(30_000);
    expect(parseDuration('d', '15m')).toBe(900_000);
    expect(parseDuration('d', '1h')).toBe(3_600_000);
    expect(parseDuration('d', '1.5h')).toBe(5_400_000);
    expect(parseDuration('d', '1d')).toBe(86_400_000);
    expect(parseDuration('d', ' 15 m ')).toBe(900_000);
  });

  it("regression: the long forms people write are read ('1 minute' was refused; @fastify/rate-limit accepts it)", () => {
    const forms: [string, number][] = [
      ['1 minute', 60_000],
      ['15 minutes', 900_000],
      ['1 hour', 3_600_000],
      ['2 hours', 7_200_000],
      ['2 days', 172_800_000],
      ['1 day', 86_400_000],
      ['30 seconds', 30_000],
      ['1 second', 1_000],
      ['250 milliseconds', 250],
      ['1 week', 604_800_000],
      ['2w', 1_209_600_000],
      ['10 sec', 10_000],
      ['5 mins', 300_000],
      ['3 hrs', 10_800_000],
      ['1 Minute', 60_000],
      ['1.5 hours', 5_400_000],
    ];
    for (const [text, ms] of forms) expect(parseDuration('d', text), text).toBe(ms);
  });
});

describe('durations and state spans are bounded (issue 11 §3.3)', () => {
  // 1e17 ms was accepted, then Redis refused every write (PX written as 1e+17).
  it('every duration option refuses more than MAX_DURATION, with a coded error', () => {
    expect(MAX_DURATION).toBe(1e13);
    expect(parseDuration('d', MAX_DURATION)).toBe(MAX_DURATION);
    expect(parseDuration('d', '115740d')).toBe(115_740 * 86_400_000);
    for (const bad of [
      MAX_DURATION + 1,
      1e17,
      '115741d',
      '1e20ms'.replace('1e20', '100000000000000000000'),
    ]) {
      expectCoded(() => parseDuration('window', bad), ErrorCode.INVALID_OPTION, 'window', 'at most');
    }
    for (const [name, make, valid] of factories) {
      for (const option of durations[name]!) {
        expectCoded(
          () => make({ ...valid, [option]: 1e17 }),
          ErrorCode.INVALID_OPTION,
          option,
          '100000000000000000',
        );
      }
    }
  });

  it('an algorithm whose state can span more than MAX_DURATION is refused', () => {
    // Each duration is fine; the longest state (a full backlog or an empty bucket) is not.
    expectCoded(
      () => tokenBucket({ capacity: 1_000_000, refillAmount: 1, refillInterval: '365d' }),
      ErrorCode.INVALID_OPTION,
      'refillInterval',
      'at most',
    );
    expectCoded(
      () => tokenBucket({ capacity: 1_000_000, refillAmount: 1, refillInterval: '365d', refill: 'stepped' }),
      ErrorCode.INVALID_OPTION,
      'refillInterval',
    );
    expectCoded(
      () => gcra({ rate: 1, period: '365d', burst: 1_000_000 }),
      ErrorCode.INVALID_OPTION,
      'period',
    );
    expectCoded(
      () => leakyBucketQueue({ rate: 1, period: '365d', queue: 1_000_000 }),
      ErrorCode.INVALID_OPTION,
      'period',
    );
    // At the bound exactly: accepted.
    expect(() =>
      tokenBucket({ capacity: 10, refillAmount: 1, refillInterval: MAX_DURATION / 10 }),
    ).not.toThrow();
    expect(() => gcra({ rate: 1, period: MAX_DURATION / 4, burst: 4 })).not.toThrow();
  });
});

describe('Limiter options and calls are validated', () => {
  const algorithm = fixedWindow({ limit: 1, window: 1000 });

  it('needs exactly one of algorithm and limits', () => {
    expect(thrown(() => new Limiter({})).code).toBe(ErrorCode.MISSING_OPTION);
    const both = thrown(() => new Limiter({ algorithm, limits: [{ algorithm }] }));
    expect(both.message).toContain('exactly one of algorithm or limits');
  });

  it('refuses an unknown option, an empty or non-array limits, bad names and duplicates', () => {
    expectCoded(() => new Limiter({ algorithm, stores: 1 } as never), ErrorCode.UNKNOWN_OPTION, 'stores');
    expectCoded(() => new Limiter({ limits: [] }), ErrorCode.INVALID_OPTION, 'limits');
    expectCoded(() => new Limiter({ limits: {} as never }), ErrorCode.INVALID_OPTION, 'limits');
    expectCoded(
      () => new Limiter({ limits: [{ algorithm, nam: 'x' } as never] }),
      ErrorCode.UNKNOWN_OPTION,
      'nam',
    );
    expectCoded(
      () => new Limiter({ limits: [{ algorithm, name: '' }] }),
      ErrorCode.INVALID_OPTION,
      'limits[0].name',
    );
    expectCoded(
      () =>
        new Limiter({
          limits: [
            { algorithm, name: 'a' },
            { algorithm, name: 'a' },
          ],
        }),
      ErrorCode.DUPLICATE_LIMIT,
      'limits[1].name',
      '"a"',
    );
  });

  it('regression: a store that is not a Store is refused at creation (it failed every call, served unlimited)', () => {
    expectCoded(() => new Limiter({ algorithm, store: {} as never }), ErrorCode.INVALID_OPTION, 'store');
    expectCoded(() => new Limiter({ algorithm, store: 'redis' as never }), ErrorCode.INVALID_OPTION, 'store');
    expectCoded(
      () => new Limiter({ algorithm, store: { consume: () => [] } as never }),
      ErrorCode.INVALID_OPTION,
      'store',
    );
  });

  it('refuses something that is not an algorithm', () => {
    expect(thrown(() => new Limiter({ algorithm: undefined as never })).code).toBe(ErrorCode.MISSING_OPTION);
    for (const bad of [null, 'token-bucket', { kind: 'token-bucket' }, () => 1]) {
      expectCoded(
        () => new Limiter({ algorithm: bad as never }),
        ErrorCode.UNKNOWN_ALGORITHM,
        'limits[0].algorithm',
      );
    }
  });

  it('cost must be an integer ≥ 1 at call time', () => {
    const limiter = new Limiter({ algorithm });
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '1', null]) {
      expectCoded(
        () => limiter.check('k', { cost: bad as never }),
        ErrorCode.INVALID_COST,
        'cost',
        String(bad),
      );
      expectCoded(
        () => limiter.peek('k', { cost: bad as never }),
        ErrorCode.INVALID_COST,
        'cost',
        String(bad),
      );
    }
  });

  it('now must be a finite number', () => {
    const limiter = new Limiter({ algorithm });
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, '0', null]) {
      expectCoded(
        () => limiter.check('k', { now: bad as never }),
        ErrorCode.INVALID_TIME,
        'now',
        String(bad),
      );
    }
  });

  it('check options are checked for typos', () => {
    const limiter = new Limiter({ algorithm });
    expectCoded(() => limiter.check('k', { costs: 2 } as never), ErrorCode.UNKNOWN_OPTION, 'costs');
  });

  it('keys must be strings (or one per limit, undefined to skip)', () => {
    const limiter = new Limiter({ algorithm });
    for (const bad of [42, null, undefined, {}, Symbol('k')]) {
      expect(thrown(() => limiter.check(bad as never)).code).toBe(ErrorCode.INVALID_KEY);
      expect(thrown(() => limiter.peek(bad as never)).code).toBe(ErrorCode.INVALID_KEY);
      expect(thrown(() => limiter.reset(bad as never)).code).toBe(ErrorCode.INVALID_KEY);
    }
    expectCoded(() => limiter.check([42] as never), ErrorCode.INVALID_KEY, 'key', '42');
    expectCoded(() => limiter.check(['a', 'b']), ErrorCode.INVALID_KEY, 'keys');
  });

  it('MemoryStore: maxKeys an integer ≥ 1, clock a function, no unknown option', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expectCoded(() => new MemoryStore({ maxKeys: bad }), ErrorCode.INVALID_OPTION, 'maxKeys', String(bad));
    }
    expectCoded(() => new MemoryStore({ clock: 5 as never }), ErrorCode.INVALID_OPTION, 'clock', '5');
    expectCoded(() => new MemoryStore({ maxkeys: 5 } as never), ErrorCode.UNKNOWN_OPTION, 'maxkeys');
  });
});

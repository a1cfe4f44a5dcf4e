import {
  byToken,
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
import { HttpLimiter, type HttpLimitOptions, type RequestAccessBase } from '@sluice/core/adapter';
import { beforeEach, describe, expect, it } from 'vitest';
import { forgetWarnings } from '../../setup/process-warnings.js';

// Issue 22 §3: mistakes fail at creation, clearly, once (HttpLimiter, below every adapter).

interface Req {
  user?: string;
}
const access: RequestAccessBase<Req> = {
  ip: () => '127.0.0.1',
  method: () => 'GET',
  route: () => undefined,
  header: () => undefined,
  proxyTrust: () => 'none',
};
const DEFAULTS = { onError: () => undefined, onWarning: () => undefined, onReleaseError: () => undefined };

const limiter = (options: HttpLimitOptions<Req>) =>
  new HttpLimiter<Req>('rateLimit', { store: new MemoryStore(), ...options }, access, DEFAULTS);

/** The coded error `make` throws (fails the test when it throws none). */
function thrown(make: () => unknown): SluiceError {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(SluiceError);
    return error as SluiceError;
  }
  throw new Error('created: no error was thrown');
}

const FACTORIES = {
  tokenBucket,
  gcra,
  fixedWindow,
  slidingWindowLog,
  slidingWindowCounter,
  leakyBucketQueue,
} as const;

describe('an algorithm factory given uncalled (plain JavaScript)', () => {
  it.each(Object.entries(FACTORIES))(
    'regression: algorithm: %s is refused at creation, never called per request with the request as its options',
    (name, factory) => {
      // Accepted before, as a plan per request: each request then failed open with
      // `fixedWindow: unknown option "_events"` (the request read as the factory's options).
      for (const options of [
        { algorithm: factory },
        { name: 'plan', algorithm: factory },
        { limits: [{ name: 'plan', algorithm: factory }] },
      ] as unknown as HttpLimitOptions<Req>[]) {
        const error = thrown(() => limiter(options));
        expect(error.code).toBe('ERR_SLUICE_UNKNOWN_ALGORITHM');
        expect(error.message).toContain(`${name}(`);
        expect(error.message).toMatch(/factory/);
      }
    },
  );

  it('the Limiter says the same', () => {
    const error = thrown(() => new Limiter({ algorithm: fixedWindow as never }));
    expect([error.code, error.option]).toEqual(['ERR_SLUICE_UNKNOWN_ALGORITHM', 'limits[0].algorithm']);
    expect(error.message).toContain('fixedWindow({');
  });

  it('a plan function of the request is still accepted', () => {
    const plan = () => fixedWindow({ limit: 3, window: '1s' });
    expect(() => limiter({ name: 'plan', algorithm: plan })).not.toThrow();
  });
});

describe('a missing algorithm', () => {
  it('regression: rateLimit({ name }) says the algorithm is missing, not "not both"', () => {
    const error = thrown(() => limiter({ name: 'x' } as HttpLimitOptions<Req>));
    expect([error.code, error.option]).toEqual(['ERR_SLUICE_MISSING_OPTION', 'algorithm']);
    expect(error.message).not.toMatch(/not both/);
    expect(error.message).toMatch(/needs an algorithm/);
  });

  it('both given still says "not both"', () => {
    const algorithm = fixedWindow({ limit: 1, window: '1s' });
    const error = thrown(() => limiter({ algorithm, limits: [{ algorithm }] }));
    expect(error.code).toBe('ERR_SLUICE_INVALID_OPTION');
    expect(error.message).toMatch(/not both/);
  });

  it('regression: limits: [{ name }] is ERR_SLUICE_MISSING_OPTION, as documented (was UNKNOWN_ALGORITHM)', () => {
    const error = thrown(() => limiter({ limits: [{ name: 'x' }] } as unknown as HttpLimitOptions<Req>));
    expect([error.code, error.option]).toEqual(['ERR_SLUICE_MISSING_OPTION', 'limits[0].algorithm']);
    const planned = thrown(() =>
      limiter({
        limits: [{ name: 'p', algorithm: () => fixedWindow({ limit: 1, window: '1s' }) }, { name: 'x' }],
      } as HttpLimitOptions<Req>),
    );
    expect([planned.code, planned.option]).toEqual(['ERR_SLUICE_MISSING_OPTION', 'limits[1].algorithm']);
    const core = thrown(() => new Limiter({ limits: [{ name: 'x' } as never] }));
    expect([core.code, core.option]).toEqual(['ERR_SLUICE_MISSING_OPTION', 'limits[0].algorithm']);
  });
});

describe('the default limit, for options that give none (issue 25 §3)', () => {
  // A clock that stands still at a minute's start: every check falls in one window.
  const store = () => new MemoryStore({ clock: () => Date.UTC(2026, 0, 1, 12, 0, 0) });
  /** The decisions of `n` requests of `req`. */
  const run = async (made: HttpLimiter<Req>, req: Req, n: number) => {
    const decisions = [];
    for (let i = 0; i < n; i++) decisions.push(await made.evaluate(req));
    return decisions;
  };

  it('no limits, no algorithm, no name: 100 a minute per address (slidingWindowCounter), named default', async () => {
    const made = limiter({ store: store() });
    expect(made.limiter!.limits.map((limit) => [limit.name, limit.algorithm.kind])).toEqual([
      ['default', 'sliding-window-counter'],
    ]);
    expect(made.limiter!.limits[0]!.algorithm.params).toEqual(
      slidingWindowCounter({ limit: 100, window: '1m' }).params,
    );
    const decisions = await run(made, {}, 101);
    expect(decisions.filter((d) => d?.allowed).length).toBe(100);
    expect(decisions[100]).toMatchObject({ allowed: false, limit: 100, policy: 'default' });
  });

  it('options without limits keep the default limit: key, enforce and block apply to it', async () => {
    const keyed = limiter({ store: store(), key: (req) => req.user });
    await run(keyed, { user: 'a' }, 100);
    expect((await keyed.evaluate({ user: 'a' }))?.allowed).toBe(false);
    expect((await keyed.evaluate({ user: 'b' }))?.allowed).toBe(true);
    const shadow = limiter({ store: store(), enforce: false });
    expect((await run(shadow, {}, 101)).every((d) => d?.allowed)).toBe(true);
    expect(limiter({ block: '1m' }).limiter!.limits[0]!.block).toBeDefined();
  });
});

describe('configuration warnings, once per process (issue 22 §3, issue 27)', () => {
  beforeEach(forgetWarnings);

  const perIp = (warnings: string[], ip: () => string | undefined, header?: string) =>
    new HttpLimiter<Req>(
      'rateLimit',
      { name: 'ip', algorithm: fixedWindow({ limit: 5, window: '1m' }), store: new MemoryStore() },
      { ...access, ip, header: (_req, name) => (name === 'x-forwarded-for' ? header : undefined) },
      { ...DEFAULTS, onWarning: (warning) => warnings.push(warning.code) },
    );

  it('regression: two middlewares seeing the same mistake warn once, not once each', async () => {
    const warnings: string[] = [];
    const app = perIp(warnings, () => '127.0.0.1', '203.0.113.1');
    const route = perIp(warnings, () => '127.0.0.1', '203.0.113.1');
    for (let i = 0; i < 3; i++) {
      await app.evaluate({});
      await route.evaluate({});
    }
    expect(warnings).toEqual(['SLUICE_FORWARDED_UNTRUSTED']);
  });

  it('byIp() without a client address skips the limit and says so once: SLUICE_NO_CLIENT_ADDRESS', async () => {
    const warnings: string[] = [];
    for (const ip of [undefined, '', 'not-an-address:x']) {
      const limiter = perIp(warnings, () => ip);
      for (let i = 0; i < 3; i++) expect(await limiter.evaluate({})).toBeUndefined();
    }
    expect(warnings).toEqual(['SLUICE_NO_CLIENT_ADDRESS']);
  });

  it('SLUICE_NO_CLIENT_ADDRESS names what the framework gave, quoted and cut short', async () => {
    const messages: string[] = [];
    const limiter = new HttpLimiter<Req>(
      'rateLimit',
      { name: 'ip', algorithm: fixedWindow({ limit: 5, window: '1m' }) },
      { ...access, ip: () => `::bad\n${'x'.repeat(200)}` },
      { ...DEFAULTS, onWarning: (warning) => messages.push(warning.message) },
    );
    await limiter.evaluate({});
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(/^sluice: byIp\(\) found no client address/);
    expect(messages[0]).not.toContain('\n');
    expect(messages[0]!.length).toBeLessThan(900);
  });

  it('a request with no token skips byToken() without a warning (an intended skip)', async () => {
    const warnings: string[] = [];
    const limiter = new HttpLimiter<Req>(
      'rateLimit',
      { name: 't', key: byToken(), algorithm: fixedWindow({ limit: 5, window: '1m' }) },
      access,
      { ...DEFAULTS, onWarning: (warning) => warnings.push(warning.code) },
    );
    expect(await limiter.evaluate({})).toBeUndefined();
    expect(warnings).toEqual([]);
  });
});

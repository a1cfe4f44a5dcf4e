import { fixedWindow, MemoryStore, RateLimitGuard, SluiceError } from '@sluice/nestjs';
import { describe, expect, it } from 'vitest';

// Issue 25 §3: `new RateLimitGuard()` limits every handler it guards with the default limit;
// `{ global: false }` is the guard that applies only the routes' @RateLimit(). Behaviour on real
// servers: test/adapters (zero-config.test.ts, and the suites' route-only apps, which use global: false).

const request = { method: 'GET', url: '/', headers: {}, ip: '198.51.100.7' };

/** The coded error `make` throws. */
function thrown(make: () => unknown): SluiceError {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(SluiceError);
    return error as SluiceError;
  }
  throw new Error('no error was thrown');
}

describe('RateLimitGuard: global', () => {
  it('without options, its global limit is the default one: 100 a minute per address, named default', async () => {
    const decision = await new RateLimitGuard().peek(request);
    expect([decision?.policy, decision?.limit, decision?.remaining]).toEqual(['default', 100, 100]);
  });

  it('options without limits (a store, a key) keep the default limit', async () => {
    const guard = new RateLimitGuard({ store: new MemoryStore(), key: () => 'one' });
    expect((await guard.peek(request))?.policy).toBe('default');
  });

  it('global: false has no global limits: peek and reset say so (ERR_SLUICE_MISSING_OPTION)', async () => {
    const guard = new RateLimitGuard({ global: false });
    await expect(guard.peek(request)).rejects.toMatchObject({
      code: 'ERR_SLUICE_MISSING_OPTION',
      option: 'global',
    });
    await expect(guard.reset('ip:198.51.100.7')).rejects.toMatchObject({ code: 'ERR_SLUICE_MISSING_OPTION' });
  });

  it('global: false with options it would never use is refused, naming them (ERR_SLUICE_INVALID_OPTION)', () => {
    const algorithm = fixedWindow({ limit: 5, window: '1m' });
    const error = thrown(() => new RateLimitGuard({ global: false, algorithm, store: new MemoryStore() }));
    expect([error.code, error.option, error.value]).toEqual(['ERR_SLUICE_INVALID_OPTION', 'global', false]);
    expect(error.message).toContain('algorithm, store');
    expect(error.message).toContain('@RateLimit()');
  });

  it('global must be true or false', () => {
    const error = thrown(() => new RateLimitGuard({ global: 'no' as never }));
    expect([error.code, error.option, error.value]).toEqual(['ERR_SLUICE_INVALID_OPTION', 'global', 'no']);
  });

  it('global: true is the default, with limits given', async () => {
    const algorithm = fixedWindow({ limit: 5, window: '1m' });
    const decision = await new RateLimitGuard({ global: true, name: 'burst', algorithm }).peek(request);
    expect([decision?.policy, decision?.remaining]).toEqual(['burst', 5]);
  });
});

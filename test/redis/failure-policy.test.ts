import { type Decision, fixedWindow, Limiter, MemoryStore, tokenBucket } from '@sluice/core';
import { RedisStore, type RedisStoreErrorEvent, SyncedStore } from '@sluice/redis';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { freePort, type RedisProcess, startRedis } from '../setup/redis-server.js';
import { Redis } from './client-family.js';
import { connectRedis } from './clients.js';

// Issue 22 §1: Redis trouble must not mean "unlimited and silent". These tests pin the default
// failure policy ('local': the same limits, decided in this process) and the default failure log.

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
process.on('unhandledRejection', onUnhandled);
afterAll(() => {
  process.off('unhandledRejection', onUnhandled);
});

const algorithm = fixedWindow({ limit: 6, window: 60_000 });

/** Lines written to a logger, one string each. */
function lines(): { warn(message: string): void; lines: string[] } {
  const written: string[] = [];
  return { warn: (message: string) => written.push(message), lines: written };
}

async function admittedOf(limiter: Limiter, key: string, requests: number): Promise<Decision[]> {
  const decisions: Decision[] = [];
  for (let i = 0; i < requests; i++) decisions.push((await limiter.check(key, { now: 0 })) as Decision);
  return decisions;
}

describe('the default failure policy keeps limiting in process', () => {
  let server: RedisProcess;
  let client: Redis;
  let clock: number;

  beforeEach(async () => {
    server = await startRedis();
    client = await connectRedis(server.port);
    clock = 1_000_000;
  });
  afterEach(async () => {
    server.resume();
    client.disconnect();
    await server.stop();
    expect(unhandled).toEqual([]);
  });

  it('regression: Redis hung mid-traffic, default options: the limit holds (it admitted every request)', async () => {
    const errors: RedisStoreErrorEvent[] = [];
    const store = new RedisStore({
      client,
      clock: () => clock,
      // Generous: on a loaded machine a healthy call must not time out before the pause.
      timeout: 1_000,
      onError: (event) => errors.push(event),
    });
    const limiter = new Limiter({ algorithm, store });
    expect(await limiter.check('k', { now: 0 })).toMatchObject({ allowed: true, remaining: 5 });
    server.pause();
    const decisions = await admittedOf(limiter, 'k', 10);
    // The local store starts fresh (it does not know Redis' count) and holds the same limit.
    expect(decisions.filter((d) => d.allowed)).toHaveLength(6);
    expect(decisions.slice(6).every((d) => d.reason === 'rate-limited')).toBe(true);
    expect(decisions[0]).toMatchObject({ limit: 6, remaining: 5 });
    expect(errors[0]).toMatchObject({ operation: 'consume' });
    expect(store.breakerState).toBe('open');
  });

  it('regression: Redis down at start-up, default options: the limit holds, and the log says so', async () => {
    const port = await freePort();
    const down = new Redis({ host: '127.0.0.1', port, enableOfflineQueue: false });
    down.on('error', () => {});
    const log = lines();
    try {
      const store = new RedisStore({ client: down, clock: () => clock, readyTimeout: 50, logger: log });
      const limiter = new Limiter({ algorithm, store });
      const decisions = await admittedOf(limiter, 'k', 9);
      expect(decisions.filter((d) => d.allowed)).toHaveLength(6);
      expect(log.lines[0]).toMatch(/RedisStore: .*readyTimeout/);
      expect(log.lines[0]).toMatch(/failurePolicy 'local'/);
    } finally {
      down.disconnect();
    }
  });

  it('outageShare scales the local limit: 1/3 of 9 is 3 requests, and remaining counts requests', async () => {
    const store = new RedisStore({
      client,
      clock: () => clock,
      outageShare: 1 / 3,
      logger: false,
    });
    const limiter = new Limiter({ algorithm: fixedWindow({ limit: 9, window: 60_000 }), store });
    server.pause();
    const decisions = await admittedOf(limiter, 'k', 5);
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    expect(decisions.map((d) => d.remaining)).toEqual([2, 1, 0, 0, 0]);
    expect(decisions[0]).toMatchObject({ limit: 9 });
  });

  it('layered limits stay all-or-nothing on the local store', async () => {
    const store = new RedisStore({ client, clock: () => clock, logger: false });
    const limiter = new Limiter({
      store,
      limits: [
        { name: 'burst', algorithm: tokenBucket({ capacity: 3, refillInterval: 60_000 }) },
        { name: 'window', algorithm: fixedWindow({ limit: 10, window: 60_000 }) },
      ],
    });
    server.pause();
    const decisions = await admittedOf(limiter, 'k', 5);
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    // The refused requests took nothing from the window.
    expect(decisions[4]!.limits[1]).toMatchObject({ policy: 'window', remaining: 7 });
  });

  it("'allow' admits with reason 'store-unavailable' (no quota it cannot vouch for) and says so loudly", async () => {
    const log = lines();
    const store = new RedisStore({ client, clock: () => clock, failurePolicy: 'allow', logger: log });
    const limiter = new Limiter({ algorithm, store });
    server.pause();
    const decisions = await admittedOf(limiter, 'k', 8);
    expect(decisions.every((d) => d.allowed && d.reason === 'store-unavailable')).toBe(true);
    expect(log.lines[0]).toMatch(/failurePolicy 'allow'.*not limited/);
  });

  it('a fallback store given as the policy gets the same share', async () => {
    const fallback = new MemoryStore();
    const store = new RedisStore({
      client,
      clock: () => clock,
      failurePolicy: fallback,
      outageShare: 0.5,
      logger: false,
    });
    const limiter = new Limiter({ algorithm, store });
    server.pause();
    const decisions = await admittedOf(limiter, 'k', 5);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(3);
  });

  it('outageShare is validated at creation', () => {
    for (const outageShare of [0, -1, 1.5, Number.NaN, '1/2']) {
      expect(
        () => new RedisStore({ client, outageShare: outageShare as number }),
        String(outageShare),
      ).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', option: 'outageShare' }));
    }
    expect(() => new RedisStore({ client, logger: 'console' as never })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', option: 'logger' }),
    );
  });
});

describe('the default failure log', () => {
  let server: RedisProcess;
  let client: Redis;
  let clock: number;

  beforeEach(async () => {
    server = await startRedis();
    client = await connectRedis(server.port);
    clock = 1_000_000;
  });
  afterEach(async () => {
    server.resume();
    client.disconnect();
    await server.stop();
    vi.restoreAllMocks();
    expect(unhandled).toEqual([]);
  });

  it('regression: without onError, failures go to console.warn: once when failing starts, per breaker change, a summary, once at recovery (it was silent)', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const store = new RedisStore({
      client,
      clock: () => clock,
      timeout: 100,
      breaker: { failures: 3, cooldown: 5_000 },
    });
    const limiter = new Limiter({ algorithm, store });
    expect(await limiter.check('k', { now: 0 })).toMatchObject({ allowed: true });
    server.pause();
    await admittedOf(limiter, 'k', 20);
    const written = () => warn.mock.calls.map((call) => String(call[0]));
    // Not a line per request: the first failure, the breaker opening.
    expect(written()).toHaveLength(2);
    expect(written()[0]).toMatch(/^\[sluice\] RedisStore: Redis failed \(consume: .*within 100 ms\)/);
    expect(written()[0]).toMatch(/failurePolicy 'local'/);
    expect(written()[1]).toMatch(/circuit breaker open/);

    // Ten seconds on, still failing: one summary line with the count.
    clock += 10_000;
    await admittedOf(limiter, 'k', 3);
    const summaries = written().filter((line) => /still failing/.test(line));
    expect(summaries).toHaveLength(1);
    expect(summaries[0]).toMatch(/2[0-9] calls answered by failurePolicy 'local'/);

    server.resume();
    clock += 5_000;
    await admittedOf(limiter, 'k', 3);
    const last = written().slice(-2).join('\n');
    expect(last).toMatch(/Redis answers again after 15\.0 s/);
    expect(last).toMatch(/circuit breaker closed/);
    expect(written().length).toBeLessThanOrEqual(6);
  });

  it('with onError and no logger, nothing is written (the hook has it); logger: false is silent', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const errors: RedisStoreErrorEvent[] = [];
    const hooked = new Limiter({
      algorithm,
      store: new RedisStore({ client, clock: () => clock, onError: (e) => errors.push(e) }),
    });
    const silent = new Limiter({
      algorithm,
      store: new RedisStore({ client, clock: () => clock, logger: false }),
    });
    server.pause();
    await admittedOf(hooked, 'k', 2);
    await admittedOf(silent, 'k', 2);
    expect(errors.length).toBeGreaterThan(0);
    expect(warn).not.toHaveBeenCalled();
  });
});

describe('SyncedStore says so too', () => {
  let server: RedisProcess;
  let client: Redis;

  beforeEach(async () => {
    server = await startRedis();
    client = await connectRedis(server.port);
  });
  afterEach(async () => {
    server.resume();
    client.disconnect();
    await server.stop();
  });

  it('regression: failed syncs are logged when they start and when they work again, not per cycle (they were silent without onError)', async () => {
    const log = lines();
    let clock = 1_000_000;
    const store = new SyncedStore({
      client: client as never,
      interval: 0,
      timeout: 100,
      clock: () => clock,
      breaker: false,
      logger: log,
      outageShare: 1 / 2,
    });
    const limiter = new Limiter({ algorithm, store });
    await limiter.check('k');
    server.pause();
    for (let i = 0; i < 5; i++) {
      await limiter.check('k');
      await store.sync();
    }
    expect(log.lines).toHaveLength(1);
    expect(log.lines[0]).toMatch(
      /SyncedStore: Redis failed \(sync: .*\).*this process's view \(1\/2 of each limit/,
    );
    server.resume();
    clock += 1_000;
    await store.sync();
    expect(log.lines).toHaveLength(2);
    expect(log.lines[1]).toMatch(/SyncedStore: Redis answers again after 1\.0 s/);
    await store.shutdown();
  });
});

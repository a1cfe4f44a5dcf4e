import { type Decision, fixedWindow, Limiter, MemoryStore } from '@sluice/core';
import type { BreakerState } from '@sluice/redis';
import { ServerStore, type ServerStoreErrorEvent } from '@sluice/server';
import { Redis, type RedisOptions } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../setup/redis-server.js';
import { type ServerProcess, spawnServer, startServer, tempDir } from './harness.js';

// Regression: ServerStore hung every request while sluice-server was down (ioredis' offline queue
// and no timeout), failed the first requests after start-up with `enableOfflineQueue: false`, and
// never reported anything. It now has RedisStore's timeout, readyTimeout, failurePolicy, breaker,
// onError and onBreakerChange.

const TIMEOUT = 100;
// Generous for a loaded 2-core machine: the call must not wait much past its own timeout.
const BOUND = TIMEOUT + 200;

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
process.on('unhandledRejection', onUnhandled);
afterAll(() => {
  process.off('unhandledRejection', onUnhandled);
});

async function timed(run: () => Promise<Decision>): Promise<{ decision: Decision; ms: number }> {
  const start = performance.now();
  const decision = await run();
  return { decision, ms: performance.now() - start };
}

function ready(client: Redis): Promise<void> {
  return client.status === 'ready'
    ? Promise.resolve()
    : new Promise((resolve) => client.once('ready', resolve));
}

describe('ServerStore while sluice-server is down', () => {
  let server: ServerProcess | undefined;
  let client: Redis | undefined;
  let dir: string;
  let clock = 1_000_000;
  let errors: ServerStoreErrorEvent[];
  let transitions: BreakerState[];
  const algorithm = fixedWindow({ limit: 10, window: 60_000 });

  async function up(options: RedisOptions = {}): Promise<Redis> {
    dir = await tempDir();
    server = await spawnServer(dir);
    // The README's client: ioredis defaults (offline queue on), no lazyConnect.
    client = new Redis({ host: '127.0.0.1', port: server.port, ...options });
    client.on('error', () => {});
    await ready(client);
    clock = 1_000_000;
    errors = [];
    transitions = [];
    return client;
  }

  afterEach(async () => {
    client?.disconnect();
    await server?.kill('SIGKILL');
    expect(unhandled).toEqual([]);
  });

  function store(options: Partial<ConstructorParameters<typeof ServerStore>[0]> = {}): ServerStore {
    return new ServerStore({
      client: client!,
      timeout: TIMEOUT,
      clock: () => clock,
      breaker: { failures: 3, cooldown: 5_000 },
      onError: (event) => errors.push(event),
      onBreakerChange: (state) => transitions.push(state),
      ...options,
    });
  }

  it("killed mid-traffic: the default 'local' keeps the limit in this process", async () => {
    await up();
    const limiter = new Limiter({ algorithm, store: store() });
    expect(await limiter.check('k', { now: 0 })).toMatchObject({ allowed: true, remaining: 9 });
    await server!.kill('SIGKILL');
    const decisions: Decision[] = [];
    for (let i = 0; i < 14; i++) decisions.push((await limiter.check('k', { now: 0 })) as Decision);
    // A fresh local count of the same limit: 10 admitted, then refused.
    expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
    expect(decisions.at(-1)).toMatchObject({ allowed: false, reason: 'rate-limited' });
    expect(errors.length).toBeGreaterThanOrEqual(3);
  });

  it("killed mid-traffic: 'allow' answers within the timeout, each failure reported, the breaker opens", async () => {
    await up();
    const serverStore = store({ failurePolicy: 'allow' });
    const limiter = new Limiter({ algorithm, store: serverStore });
    expect(await limiter.check('k', { now: 0 })).toMatchObject({ allowed: true, remaining: 9 });

    const inFlight = Array.from({ length: 5 }, () =>
      timed(() => limiter.check('k', { now: 0 }) as Promise<Decision>),
    );
    await server!.kill('SIGKILL');
    for (const call of await Promise.all(inFlight)) expect(call.ms).toBeLessThan(BOUND);

    while (serverStore.breakerState !== 'open') {
      const { decision, ms } = await timed(
        () => limiter.check('k', { now: 0, cost: 2 }) as Promise<Decision>,
      );
      expect(ms).toBeLessThan(BOUND);
      expect(decision.allowed).toBe(true);
    }
    expect(errors.length).toBeGreaterThanOrEqual(3);
    expect(errors.every((e) => e.operation === 'consume' && e.keys === 1)).toBe(true);
    expect(errors.at(-1)).toMatchObject({ breaker: 'open' });
    expect(transitions).toEqual(['open']);

    // Open: no waiting, no more reports.
    const reported = errors.length;
    const fast = await timed(() => limiter.check('k', { now: 0, cost: 2 }) as Promise<Decision>);
    expect(fast.ms).toBeLessThan(TIMEOUT / 2);
    expect(fast.decision).toMatchObject({ allowed: true, limit: 10, reason: 'store-unavailable' });
    expect(errors).toHaveLength(reported);
  });

  it("'deny' refuses with 'store-unavailable' within the timeout", async () => {
    await up();
    const limiter = new Limiter({ algorithm, store: store({ failurePolicy: 'deny' }) });
    await server!.kill('SIGKILL');
    for (let i = 0; i < 3; i++) {
      const { decision, ms } = await timed(() => limiter.check('k', { now: 0 }) as Promise<Decision>);
      expect(ms).toBeLessThan(BOUND);
      expect(decision).toMatchObject({ allowed: false, reason: 'store-unavailable', retryAfter: 5_000 });
    }
    expect(errors).toHaveLength(3);
    expect(errors[0]).toMatchObject({ operation: 'consume', keys: 1, breaker: 'closed' });
    expect(errors[0]!.error).toMatchObject({ code: 'ERR_SLUICE_STORE_FAILURE' });
    expect(errors[2]).toMatchObject({ breaker: 'open' });
  });

  it('a fallback MemoryStore decides while the server is down', async () => {
    await up();
    const limiter = new Limiter({
      algorithm: fixedWindow({ limit: 2, window: 60_000 }),
      store: store({ failurePolicy: new MemoryStore(), breaker: false }),
    });
    await server!.kill('SIGKILL');
    const answers = [];
    for (let i = 0; i < 3; i++) {
      const { decision, ms } = await timed(() => limiter.check('k', { now: 0 }) as Promise<Decision>);
      expect(ms).toBeLessThan(BOUND);
      answers.push(decision.allowed);
    }
    expect(answers).toEqual([true, true, false]);
    expect(errors).toHaveLength(3);
  });

  it('recovers when the server returns: the breaker probes, closes, and the server decides again', async () => {
    await up({ enableOfflineQueue: false });
    const serverStore = store({ failurePolicy: 'deny' });
    const limiter = new Limiter({ algorithm, store: serverStore });
    expect(await limiter.check('k', { now: 0 })).toMatchObject({ allowed: true, remaining: 9 });
    const port = server!.port;
    await server!.kill('SIGKILL');
    for (let i = 0; i < 3; i++) await limiter.check('k', { now: 0 });
    expect(serverStore.breakerState).toBe('open');

    server = await spawnServer(dir, port);
    await ready(client!);
    // Still open until the cooldown has passed on the store's clock.
    expect(await limiter.check('k', { now: 0 })).toMatchObject({ reason: 'store-unavailable' });
    clock += 5_000;
    // The state outlived the crash (LMDB), and the failed calls consumed nothing.
    expect(await limiter.check('k', { now: 0 })).toMatchObject({ allowed: true, remaining: 8 });
    expect(serverStore.breakerState).toBe('closed');
    expect(transitions).toEqual(['open', 'half-open', 'closed']);
  });
});

describe('ServerStore before the client is first ready', () => {
  it('calls made while the client makes its first connection wait for it and are decided by the server', async () => {
    const port = await freePort();
    const errors: ServerStoreErrorEvent[] = [];
    // Created before the server listens: the store must wait rather than fail or open the breaker.
    const client = new Redis({ host: '127.0.0.1', port, enableOfflineQueue: false });
    client.on('error', () => {});
    const limiter = new Limiter({
      algorithm: fixedWindow({ limit: 10, window: 60_000 }),
      store: new ServerStore({ client, failurePolicy: 'deny', onError: (e) => errors.push(e) }),
    });
    const early = Array.from({ length: 3 }, () => limiter.check('k', { now: 0 }) as Promise<Decision>);
    const t = await startServer({ port });
    try {
      const decisions = await Promise.all(early);
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, true]);
      expect(decisions.map((d) => d.remaining).sort()).toEqual([7, 8, 9]);
      expect(errors).toEqual([]);
      const other = await t.client();
      expect(
        await new Limiter({
          algorithm: fixedWindow({ limit: 10, window: 60_000 }),
          store: new ServerStore({ client: other }),
        }).peek('k', { now: 0 }),
      ).toMatchObject({ remaining: 7 });
    } finally {
      client.disconnect();
      await t.stop();
    }
  });

  it('past readyTimeout the failure policy answers, reported once as connect', async () => {
    const port = await freePort();
    const errors: ServerStoreErrorEvent[] = [];
    const client = new Redis({ host: '127.0.0.1', port, enableOfflineQueue: false });
    client.on('error', () => {});
    try {
      const limiter = new Limiter({
        algorithm: fixedWindow({ limit: 10, window: 60_000 }),
        store: new ServerStore({
          client,
          readyTimeout: 50,
          failurePolicy: 'deny',
          onError: (e) => errors.push(e),
        }),
      });
      const decisions = await Promise.all([limiter.check('a', { now: 0 }), limiter.check('b', { now: 0 })]);
      expect(decisions.map((d) => d.reason)).toEqual(['store-unavailable', 'store-unavailable']);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatchObject({ operation: 'connect', keys: 2 });
    } finally {
      client.disconnect();
    }
  });
});

describe('ServerStore failure options are validated at creation', () => {
  const client = new Redis({ lazyConnect: true });
  afterAll(() => client.disconnect());
  it.each([
    [{ timeout: 0 }, 'timeout'],
    [{ timeout: -1 }, 'timeout'],
    [{ readyTimeout: Number.NaN }, 'readyTimeout'],
    [{ failurePolicy: 'open' }, 'failurePolicy'],
    [{ breaker: { failures: 0 } }, 'breaker.failures'],
    [{ breaker: { cooldown: -5 } }, 'breaker.cooldown'],
    [{ onError: 'log' }, 'onError'],
    [{ onBreakerChange: 1 }, 'onBreakerChange'],
  ] as const)('%o is refused, naming %s', (bad, option) => {
    expect(() => new ServerStore({ client, ...(bad as object) })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', option }),
    );
  });
});

import { readFileSync } from 'node:fs';
import {
  ConcurrencyLimiter,
  type Decision,
  fixedWindow,
  type Lease,
  Limiter,
  type MaybePromise,
} from '@sluice/core';
import { RedisStore, type RedisStoreErrorEvent } from '@sluice/redis';
import { Cluster, Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, afterEach, describe, expect, inject, it, vi } from 'vitest';
import { freePort, type RedisProcess, startRedis } from '../setup/redis-server.js';
import { uniquePrefix } from './clients.js';

// Issue 11 §2: the README's setup (a client created without lazyConnect, requests at once) opened
// the breaker before the client was ready and failed open: 511,616 admitted against a limit of 5.
// These tests build the client and the store exactly as the README writes them (only the address
// differs) and send traffic from the first millisecond, before the client has connected.

const README = readFileSync(new URL('../../packages/redis/README.md', import.meta.url), 'utf8');
const NOW = 1_700_000_000_000;

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
process.on('unhandledRejection', onUnhandled);
afterAll(() => {
  process.off('unhandledRejection', onUnhandled);
});

/**
 * Calls `call` in waves of `wave` (one wave per turn of the event loop, the first synchronously,
 * right after the client was made) until the client is ready, and `after` more waves once it is;
 * resolves with every answer. At most `cap` calls wait for the connection: the store's timeout
 * starts when they are sent, all at once, and a bigger herd can outlast it, which hands calls to
 * the failure policy by design whatever the start-up does.
 */
async function flood<T>(
  client: Redis | Cluster,
  call: () => MaybePromise<T>,
  { wave = 25, cap = 150, after = 3 } = {},
): Promise<T[]> {
  const answers: Promise<T>[] = [];
  let left = after;
  let turns = 0;
  while (left > 0) {
    const ready = client.status === 'ready';
    if (ready || answers.length < cap) {
      for (let i = 0; i < wave; i++) answers.push(Promise.resolve(call()));
    }
    if (ready) left--;
    // Give ioredis its turn (connect, replies) between waves; a bound on turns, not on time.
    await new Promise((resolve) => setImmediate(resolve));
    if (++turns > 1_000_000) throw new Error(`the client never got ready (status ${client.status})`);
  }
  return Promise.all(answers);
}

/**
 * The README's store leaves `timeout` at its default, 100 ms. On a loaded machine (load 8 on 2
 * cores) the first herd's answers can take longer, and the failure policy then answers by design
 * (seen: 10 admitted against a limit of 5 on the Cluster, half by the default 'local'). These
 * tests are about start-up, not latency: their stores wait up to 2 s per call, and up to 10 s for
 * the client's first connection (a Cluster client's connect, CLUSTER SLOTS and connections to each
 * primary outlasted the default 2 s readyTimeout under `pnpm test:stress`: 10 admitted again).
 * What the issue broke still fails them: calls sent before the client was ready failed at once,
 * whatever the timeout, and opened the breaker.
 */
const START_UP = { timeout: 2_000, readyTimeout: 10_000 } as const;

describe('the README setup under load from the first millisecond', () => {
  let server: RedisProcess | undefined;
  let client: Redis | Cluster | undefined;

  afterEach(async () => {
    client?.disconnect();
    client = undefined;
    await server?.stop();
    server = undefined;
    expect(unhandled).toEqual([]);
  });

  it('the README writes the setup these tests run', () => {
    expect(README).toContain(
      "const client = new Redis({ host: '127.0.0.1', port: 6379, enableOfflineQueue: false });",
    );
    expect(README).toContain('const store = new RedisStore({ client });');
    expect(README).toContain(
      "const client = new Cluster([{ host: 'node-1', port: 6379 }], {\n  enableOfflineQueue: false,",
    );
    expect(README).toContain('  retryDelayOnFailover: 10,\n');
    expect(README).toContain('  retryDelayOnClusterDown: 0,\n});');
    expect(README).toContain(
      "const exports = new ConcurrencyLimiter({ limit: 5, ttl: '2m', name: 'exports', store });",
    );
  });

  it('standalone: exactly the limit is admitted, nothing fails open, the breaker stays closed', async () => {
    server = await startRedis();
    const port = server.port;
    client = new Redis({ host: '127.0.0.1', port, enableOfflineQueue: false });
    const store = new RedisStore({ client, ...START_UP });
    expect(client.status).not.toBe('ready');
    const limiter = new Limiter({ store, algorithm: fixedWindow({ limit: 5, window: '1m' }) });
    const decisions = await flood(client, () => limiter.check('user:42', { now: NOW }) as Promise<Decision>);
    expect(decisions.length).toBeGreaterThanOrEqual(150);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
    expect(decisions.filter((d) => !d.allowed).every((d) => d.reason === 'rate-limited')).toBe(true);
    expect(store.breakerState).toBe('closed');
  });

  it("ioredis' default offline queue: the same, exactly the limit", async () => {
    server = await startRedis();
    client = new Redis({ host: '127.0.0.1', port: server.port });
    const store = new RedisStore({ client, ...START_UP });
    const limiter = new Limiter({ store, algorithm: fixedWindow({ limit: 5, window: '1m' }) });
    const decisions = await flood(client, () => limiter.check('user:42', { now: NOW }) as Promise<Decision>);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
    expect(store.breakerState).toBe('closed');
  });

  it('leases: exactly the limit is acquired, nothing fails open', async () => {
    server = await startRedis();
    const port = server.port;
    client = new Redis({ host: '127.0.0.1', port, enableOfflineQueue: false });
    const store = new RedisStore({ client, ...START_UP });
    const exports = new ConcurrencyLimiter({ limit: 5, ttl: '2m', name: 'exports', store });
    const leases = await flood(client, () => exports.acquire('token:abc') as Promise<Lease>);
    expect(leases.filter((lease) => lease.decision.allowed)).toHaveLength(5);
    expect(leases.filter((l) => !l.decision.allowed).every((l) => l.decision.reason === 'concurrency')).toBe(
      true,
    );
    expect(store.leases.policyLeaseCount).toBe(0);
    expect(store.breakerState).toBe('closed');
    const [set] = store.leases.keysFor('exports', 'token:abc');
    expect(await (client as Redis).zcard(set)).toBe(5);
  });

  it('cluster: exactly the limit is admitted, nothing fails open', async () => {
    const ports = inject('redisClusterPorts');
    client = new Cluster([{ host: '127.0.0.1', port: ports[0]! }], {
      enableOfflineQueue: false,
      retryDelayOnFailover: 10,
      retryDelayOnClusterDown: 0,
    });
    const store = new RedisStore({ client, prefix: uniquePrefix('readme'), ...START_UP });
    const limiter = new Limiter({ store, algorithm: fixedWindow({ limit: 5, window: '1m' }) });
    const decisions = await flood(client, () => limiter.check('user:42', { now: NOW }) as Promise<Decision>);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
    expect(store.breakerState).toBe('closed');
  });

  it('Redis down at start: past readyTimeout the policy answers, reported once as connect; then Redis counts', async () => {
    const port = await freePort();
    const errors: RedisStoreErrorEvent[] = [];
    let clock = NOW;
    client = new Redis({ host: '127.0.0.1', port, enableOfflineQueue: false });
    client.on('error', () => {
      // ECONNREFUSED while nothing listens: ioredis reconnects on its own.
    });
    const store = new RedisStore({
      client,
      failurePolicy: 'deny',
      readyTimeout: 1_000,
      clock: () => clock,
      onError: (event) => errors.push(event),
    });
    const limiter = new Limiter({ store, algorithm: fixedWindow({ limit: 5, window: '1m' }) });
    const start = performance.now();
    const waiting = Array.from({ length: 50 }, () => limiter.check('k', { now: NOW }) as Promise<Decision>);
    const answers = await Promise.all(waiting);
    expect(performance.now() - start).toBeGreaterThanOrEqual(995);
    for (const decision of answers) {
      expect(decision).toMatchObject({ allowed: false, reason: 'store-unavailable' });
    }
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ operation: 'connect', keys: 50, breaker: 'closed' });
    expect(errors[0]!.error).toMatchObject({ code: 'ERR_SLUICE_STORE_FAILURE' });
    expect(String((errors[0]!.error as Error).message)).toContain('readyTimeout');
    // Past the bound, calls no longer wait: they fail as usual (and count for the breaker).
    const late = performance.now();
    expect(await limiter.check('k', { now: NOW })).toMatchObject({ reason: 'store-unavailable' });
    expect(performance.now() - late).toBeLessThan(500);
    expect(errors[1]).toMatchObject({ operation: 'consume' });

    const ready = new Promise<void>((resolve) => client!.once('ready', () => resolve()));
    server = await startRedis({ port });
    await ready;
    clock += 60_000;
    expect(await limiter.check('k', { now: NOW })).toMatchObject({ allowed: true, remaining: 4 });
    expect(store.breakerState).toBe('closed');
  });

  it('regression: node-redis as the README sets it up starts with Redis down, limits in process, then Redis counts (await connect() never resolved: the app never listened)', async () => {
    expect(README).toContain(
      "client.connect().catch((error) => console.warn('redis: connect failed:', error.message));",
    );
    expect(README).not.toMatch(/^await client\.connect\(\);$/m);
    const port = await freePort();
    const warned: string[] = [];
    const warn = (...args: unknown[]) => warned.push(args.map(String).join(' '));
    // The README's lines, with its console.warn as `warn` and this test's address.
    const node = createClient({ url: `redis://127.0.0.1:${port}`, disableOfflineQueue: true });
    node.on('error', (error) => warn('redis:', error.message));
    node.connect().catch((error) => warn('redis: connect failed:', error.message));
    const logged: string[] = [];
    const store = new RedisStore({
      client: node,
      logger: { warn: (line) => logged.push(line) },
      ...START_UP,
      // Nothing listens: the policy answers once this wait is over.
      readyTimeout: 200,
    });
    try {
      const limiter = new Limiter({ store, algorithm: fixedWindow({ limit: 5, window: '1m' }) });
      // Answered (the setup did not hang), by the default policy: the limit holds in process.
      const decisions = await Promise.all(
        Array.from({ length: 8 }, () => limiter.check('k', { now: NOW }) as Promise<Decision>),
      );
      expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
      expect(logged[0]).toMatch(/readyTimeout.*failurePolicy 'local'/);
      // The README's error listener logs the refused connection. Waited for: on a loaded machine
      // the 200 ms readyTimeout's timer can run before the socket's error is handled (timers come
      // before I/O in a turn of the event loop when both are due).
      await vi.waitFor(() => expect(warned.some((line) => line.startsWith('redis:'))).toBe(true), {
        timeout: 10_000,
      });
      // Redis comes up: the client connects on its own and Redis decides.
      server = await startRedis({ port });
      const ready = node.isReady
        ? Promise.resolve()
        : new Promise<void>((resolve) => node.once('ready', () => resolve()));
      await ready;
      // The breaker (if open) lets a probe through after its cooldown (real time here: a real
      // client reconnecting); poll, bounded, until a fresh key is counted by Redis.
      let counted: Decision | undefined;
      for (let tries = 0; tries < 400 && counted === undefined; tries++) {
        const decision = (await limiter.check(`fresh:${tries}`, { now: NOW })) as Decision;
        if (store.breakerState === 'closed' && logged.some((line) => /answers again/.test(line)))
          counted = decision;
        else await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(counted).toMatchObject({ allowed: true, remaining: 4 });
    } finally {
      node.destroy();
    }
  });

  it('a client that has ended is not waited for: the call fails at once and is reported', async () => {
    server = await startRedis();
    const errors: RedisStoreErrorEvent[] = [];
    client = new Redis({ host: '127.0.0.1', port: server.port, enableOfflineQueue: false });
    const ended = new Promise<void>((resolve) => client!.once('end', () => resolve()));
    client.disconnect();
    await ended;
    const store = new RedisStore({ client, failurePolicy: 'deny', onError: (event) => errors.push(event) });
    const limiter = new Limiter({ store, algorithm: fixedWindow({ limit: 5, window: '1m' }) });
    const start = performance.now();
    expect(await limiter.check('k', { now: NOW })).toMatchObject({ reason: 'store-unavailable' });
    // Not the 2000 ms of the default readyTimeout.
    expect(performance.now() - start).toBeLessThan(1_000);
    expect(errors.map((e) => e.operation)).toEqual(['consume']);
  });

  it('readyTimeout is validated', () => {
    const made = new Redis({ lazyConnect: true });
    try {
      for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31, '1s']) {
        expect(() => new RedisStore({ client: made, readyTimeout: bad as number })).toThrow(
          expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', option: 'readyTimeout' }),
        );
      }
      expect(() => new RedisStore({ client: made, readyTimeout: 0 })).not.toThrow();
    } finally {
      made.disconnect();
    }
  });
});

/**
 * Issue 37.4: concurrency leases under faults, on every store that keeps them outside the process
 * (RedisStore, ServerStore on sluice-server, HostStore), each a real server or directory:
 * - the process holding leases is SIGKILLed: its leases count until their ttl, never longer, and
 *   then exactly the limit is admitted again;
 * - the network drops the release (the connection reset, new ones refused): the release resolves
 *   false and is logged, the lease counts until its ttl, and in flight never exceeds the limit;
 * - the store stalls (SIGSTOP) while leases are asked for: the failure policy's local leases
 *   decide (never more than the limit in this process), and the acquires that timed out but ran
 *   late in the store are released when their replies arrive: nothing is left held afterwards.
 * Time is the leases' `now` (explicit), so the ttl is passed without waiting for it.
 * RELIABILITY.md's lease table is this file's.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConcurrencyLimiter, type Lease } from '@sluice/core';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnServer, tempDir } from '../server/harness.js';
import { startCutProxy } from '../setup/cut-proxy.js';
import { nodeScript } from '../setup/node-script.js';
import { startRedis } from '../setup/redis-server.js';
import { type BackendAddress, type LeaseBackend, openStore } from './lease-backends.js';

const NOW = 1_000_000;
const TTL = 10_000;
const LIMIT = 3;
const HOLDER = join(import.meta.dirname, 'lease-holder.ts');

/** A backend of the test's own, and how to stall it (SIGSTOP) where it is a process. */
interface Up {
  readonly address: BackendAddress;
  stall?(): void;
  resume?(): void;
  stop(): Promise<void>;
}

async function up(backend: LeaseBackend): Promise<Up> {
  if (backend === 'redis') {
    const server = await startRedis();
    return {
      address: { backend, port: server.port },
      stall: server.pause,
      resume: server.resume,
      stop: server.stop,
    };
  }
  if (backend === 'server') {
    const dir = await tempDir();
    const server = await spawnServer(dir);
    const pid = server.child.pid!;
    return {
      address: { backend, port: server.port },
      stall: () => process.kill(pid, 'SIGSTOP'),
      resume: () => process.kill(pid, 'SIGCONT'),
      async stop() {
        process.kill(pid, 'SIGCONT');
        await server.kill('SIGKILL');
        await rm(dir, { recursive: true, force: true });
      },
    };
  }
  const dir = await mkdtemp(join(tmpdir(), 'sluice-lease-faults-'));
  return {
    address: { backend, path: join(dir, 'leases') },
    stop: () => rm(dir, { recursive: true, force: true }),
  };
}

/** Polls `test` every 10 ms, up to 10 s. */
async function until(test: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !test(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(test()).toBe(true);
}

async function ready(client: Redis | undefined): Promise<void> {
  if (client === undefined || client.status === 'ready') return;
  await once(client, 'ready');
}

/** `tries` acquires of `key` at `now`: which were admitted (and the admitted leases, to release). */
async function acquireAll(limiter: ConcurrencyLimiter, now: number, tries = LIMIT + 1) {
  const leases: Lease[] = [];
  for (let i = 0; i < tries; i++) leases.push(await limiter.acquire('k', { now }));
  return { allowed: leases.map((l) => l.decision.allowed), leases: leases.filter((l) => l.decision.allowed) };
}

const cleanups: (() => Promise<void>)[] = [];

/** A store of `backend` reached through a proxy that can cut the link, holding the limit's leases. */
async function holdingThroughProxy(backend: LeaseBackend, options: { timeout?: number; lines?: string[] }) {
  const store = await up(backend);
  cleanups.push(store.stop);
  const proxy = await startCutProxy(store.address.port!);
  cleanups.push(proxy.close);
  const opened = openStore({ backend, port: proxy.port }, options);
  cleanups.push(opened.close);
  await ready(opened.client);
  const limiter = new ConcurrencyLimiter({ name: 'jobs', limit: LIMIT, ttl: TTL, store: opened.store });
  const taken = await acquireAll(limiter, NOW, LIMIT);
  expect(taken.allowed).toEqual([true, true, true]);
  return { proxy, client: opened.client!, limiter, leases: taken.leases };
}
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe.each(['redis', 'server', 'host'] as const)('leases on %s under faults', (backend) => {
  it('the holder SIGKILLed: its leases count until their ttl, then exactly the limit is admitted again', async () => {
    const store = await up(backend);
    cleanups.push(store.stop);
    const holder: ChildProcess = fork(await nodeScript(HOLDER), [], {
      execArgv: [],
      env: {
        ...process.env,
        SLUICE_LEASE_HOLDER: JSON.stringify({
          address: store.address,
          key: 'k',
          limit: LIMIT,
          ttl: TTL,
          now: NOW,
        }),
      },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    const [report] = (await once(holder, 'message')) as [{ held: number }];
    expect(report.held).toBe(LIMIT);
    holder.kill('SIGKILL');
    await once(holder, 'exit');

    const lines: string[] = [];
    const opened = openStore(store.address, { lines });
    cleanups.push(opened.close);
    await ready(opened.client);
    const limiter = new ConcurrencyLimiter({ name: 'jobs', limit: LIMIT, ttl: TTL, store: opened.store });
    // The dead process's leases still count: nothing more is in flight than the limit.
    expect((await limiter.acquire('k', { now: NOW + 1 })).decision).toMatchObject({
      allowed: false,
      reason: 'concurrency',
    });
    expect((await limiter.acquire('k', { now: NOW + TTL - 1 })).decision.allowed).toBe(false);
    // Past their ttl they are gone: the limit again, and not one more.
    const after = await acquireAll(limiter, NOW + TTL);
    expect(after.allowed).toEqual([true, true, true, false]);
    for (const lease of after.leases) expect(await lease.release(NOW + TTL + 1)).toBe(true);
    // The store never failed: nothing to log.
    expect(lines).toEqual([]);
  }, 60_000);

  if (backend === 'host') return;

  it('the network drops the releases: each resolves false and is logged, the leases count until their ttl, never past it', async () => {
    const lines: string[] = [];
    const { proxy, client, limiter, leases } = await holdingThroughProxy(backend, { lines });

    proxy.cut();
    // The client has seen its connection go: the releases fail at once and never reach the
    // store (one written before that is re-sent once the client reconnects: the next test).
    await until(() => client.status !== 'ready');
    for (const lease of leases) expect(await lease.release(NOW + 5)).toBe(false);
    proxy.restore();
    await ready(client);

    // The releases never reached the store: the leases count, and nothing more is admitted.
    expect((await limiter.acquire('k', { now: NOW + 10 })).decision).toMatchObject({
      allowed: false,
      reason: 'concurrency',
    });
    // Their ttl frees them: exactly the limit again.
    const after = await acquireAll(limiter, NOW + TTL);
    expect(after.allowed).toEqual([true, true, true, false]);
    // Said once, loudly: the release failed, and its lease stays held until its ttl.
    expect(lines[0]).toMatch(
      /failed \(release: .*\); a lease whose release failed stays held .* until its ttl/,
    );
    expect(lines.length).toBeLessThanOrEqual(2);
  }, 60_000);

  it('the connection drops with the releases in flight: those the client re-sends free their leases, the rest hold until their ttl, never more than the limit', async () => {
    const { proxy, client, limiter, leases } = await holdingThroughProxy(backend, { timeout: 500 });

    // Written to the connection before the client learns it is gone: unanswered, so reported as
    // failed at the timeout (the store cannot know whether they ran).
    proxy.cut();
    const released = await Promise.all(leases.map((lease) => lease.release(NOW + 5)));
    expect(released).toEqual([false, false, false]);
    proxy.restore();
    await ready(client);

    // ioredis re-sends commands a dropped connection left unanswered: such a release runs late,
    // and its lease is freed before its ttl (never twice: a release removes its own id). Which
    // ones it re-sends is the client's (2 of 3 here): the rest hold until their ttl. Either way
    // the store never has more than the limit in flight.
    let free = 0;
    for (let i = 0; i < 20; i++) free = (await limiter.peek('k', { now: NOW + 10 })).remaining;
    const now = await acquireAll(limiter, NOW + 10);
    expect(now.allowed).toEqual([...Array(free).fill(true), ...Array(LIMIT + 1 - free).fill(false)]);
    // Past the old leases' ttl: the ones still held from before expire; the new ones count.
    const later = await acquireAll(limiter, NOW + TTL);
    expect(later.leases).toHaveLength(LIMIT - free);
  }, 60_000);

  it('the store stalls while leases are asked for: local leases decide within the limit, and the late-run acquires are released', async () => {
    const store = await up(backend);
    cleanups.push(async () => {
      store.resume!();
      await store.stop();
    });
    const lines: string[] = [];
    // A short timeout for the calls that meet the stall; the checks afterwards use a patient store.
    const stalled = openStore(store.address, { lines, timeout: 200 });
    cleanups.push(stalled.close);
    await ready(stalled.client);
    const limiter = new ConcurrencyLimiter({ name: 'jobs', limit: LIMIT, ttl: TTL, store: stalled.store });

    store.stall!();
    let during: { allowed: boolean[]; leases: Lease[] };
    try {
      during = await acquireAll(limiter, NOW);
      // The failure policy ('local', the default): this process's own leases, within the limit.
      expect(during.allowed).toEqual([true, true, true, false]);
      for (const lease of during.leases) await lease.release(NOW + 1);
    } finally {
      store.resume!();
    }

    const patient = openStore(store.address);
    cleanups.push(patient.close);
    await ready(patient.client);
    const check = new ConcurrencyLimiter({ name: 'jobs', limit: LIMIT, ttl: TTL, store: patient.store });
    // The acquires the stall timed out run now; their late replies (on the stalled store's
    // connection) release them. Wait by round trips, not by time.
    let free = 0;
    for (let i = 0; i < 200 && free < LIMIT; i++) {
      free = (await check.peek('k', { now: NOW + 2 })).remaining;
    }
    expect(free).toBe(LIMIT);
    const after = await acquireAll(check, NOW + 2);
    expect(after.allowed).toEqual([true, true, true, false]);
    expect(lines.some((line) => line.includes('acquire'))).toBe(true);
  }, 60_000);
});

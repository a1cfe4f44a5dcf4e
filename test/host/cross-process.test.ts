/**
 * Exact across processes: 4 worker processes (forked, each its own HostStore on one directory,
 * started at once on an empty one as PM2 starts its instances, no primary creating it first) × 64
 * concurrent checks on one key admit exactly the limit, for every algorithm; layered limits stay
 * all-or-nothing; a lease limit holds exactly; a worker killed inside a write transaction (holding
 * LMDB's lock) blocks nobody and its uncommitted write is gone; SIGKILL under load loses no
 * acknowledged decision and gives no token twice. Verdicts never depend on timing: every check of
 * the exactness tests carries the same `now`, and the waits are for events, bounded generously.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type AlgorithmKind, ConcurrencyLimiter, type Decision, Limiter } from '@sluice/core';
import { ALGORITHM_KIND_LIST } from '@sluice/core/adapter';
import { HostStore } from '@sluice/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempPath } from './helpers.js';
import { type AlgorithmSpec, build, neverRefilled } from './worker-commands.js';
import { startWorkers, type WorkerProcess } from './workers.js';

const WORKERS = 4;
const CLIENTS = 64;
const ROUNDS = 3;
const LIMIT = 100;
// Windows are aligned to the epoch: a time 10 s into an hour is nowhere near a '1h' window's end.
const NOW = Math.floor(Date.now() / 3_600_000) * 3_600_000 + 10_000;

/** Every kind of ALGORITHM_KINDS (the type makes a new kind a compile error here), and variants. */
const KINDS: Record<AlgorithmKind, AlgorithmSpec> = {
  'token-bucket': { kind: 'token-bucket', options: { capacity: LIMIT, refillInterval: '1h' } },
  gcra: { kind: 'gcra', options: { rate: LIMIT, period: '1h' } },
  'fixed-window': { kind: 'fixed-window', options: { limit: LIMIT, window: '1h' } },
  'sliding-window-log': { kind: 'sliding-window-log', options: { limit: LIMIT, window: '1h' } },
  'sliding-window-counter': { kind: 'sliding-window-counter', options: { limit: LIMIT, window: '1h' } },
  'leaky-bucket-queue': {
    kind: 'leaky-bucket-queue',
    options: { rate: 1, period: '1h', burst: LIMIT / 2, queue: LIMIT / 2, maxDelay: '1000h' },
  },
};
const SPECS: Record<string, AlgorithmSpec> = {
  ...KINDS,
  'token-bucket (stepped, strict)': {
    kind: 'token-bucket',
    options: { capacity: LIMIT, refillInterval: '1h', refill: 'stepped', strict: true },
  },
  'sliding-window-counter (precision 60)': {
    kind: 'sliding-window-counter',
    options: { limit: LIMIT, window: '1h', precision: 60 },
  },
};

// Issue 36: over shards (each process asking for 4 on the empty directory) every guarantee holds
// the same; the layered limits' two keys may then sit in two shards.
for (const shards of [undefined, 4]) {
  describe(`HostStore across 4 processes${shards === undefined ? '' : `, ${shards} shards`}`, () => {
    const path = tempPath('cross');
    let workers: WorkerProcess[] = [];
    let store: HostStore;

    beforeAll(async () => {
      workers = await startWorkers(path, WORKERS, undefined, shards);
      store = new HostStore({ path, logger: false, ...(shards === undefined ? {} : { shards }) });
    }, 120_000);
    afterAll(async () => {
      await store?.shutdown();
      await Promise.all(workers.map((w) => w.kill()));
    });

    /** Every worker runs CLIENTS concurrent clients of ROUNDS checks each, at once; admitted in all. */
    async function burst(limits: { name: string; key: string; spec: AlgorithmSpec }[]): Promise<number> {
      const results = await Promise.all(
        workers.map((w) =>
          w.call<{ admitted: number }>({ type: 'burst', limits, clients: CLIENTS, rounds: ROUNDS, now: NOW }),
        ),
      );
      return results.reduce((sum, r) => sum + r.admitted, 0);
    }

    it('covers every kind of ALGORITHM_KINDS', () => {
      expect(Object.keys(KINDS).sort()).toEqual([...ALGORITHM_KIND_LIST].sort());
    });

    for (const [label, spec] of Object.entries(SPECS)) {
      it(`${label}: ${WORKERS} × ${CLIENTS} concurrent checks on one key admit exactly the limit`, async () => {
        const key = `one-key:${label}`;
        const admitted = await burst([{ name: 'limit', key, spec }]);
        const algorithm = build(spec);
        expect(algorithm.limit).toBe(LIMIT);
        expect(admitted).toBe(LIMIT);
        const after = (await new Limiter({ limits: [{ name: 'limit', algorithm }], store }).peek(key, {
          now: NOW,
        })) as Decision;
        expect(after.remaining).toBe(0);
      }, 120_000);
    }

    it('layered limits on two keys: exactly the limit admitted, the other limit charged for admitted requests only', async () => {
      const user = { name: 'user', key: 'user:1', spec: SPECS['fixed-window']! };
      const team = {
        name: 'team',
        key: 'team:1',
        spec: { kind: 'fixed-window', options: { limit: 10 * LIMIT, window: '1h' } } as AlgorithmSpec,
      };
      expect(await burst([user, team])).toBe(LIMIT);
      const limiter = new Limiter({
        limits: [
          { name: 'user', algorithm: build(user.spec) },
          { name: 'team', algorithm: build(team.spec) },
        ],
        store,
      });
      const after = (await limiter.peek([user.key, team.key], { now: NOW })) as Decision;
      expect(after.limits.map((d) => d.remaining)).toEqual([0, 9 * LIMIT]);
    }, 120_000);

    it('a concurrency limit holds exactly its leases across the processes, and releases free them', async () => {
      const call = {
        type: 'acquire' as const,
        space: 'uploads',
        key: 'tenant:1',
        limit: 10,
        count: 16,
        now: NOW,
      };
      const first = await Promise.all(workers.map((w) => w.call<{ admitted: number }>(call)));
      expect(first.reduce((sum, r) => sum + r.admitted, 0)).toBe(10);
      const limiter = new ConcurrencyLimiter({ name: 'uploads', limit: 10, store });
      expect((await limiter.peek('tenant:1', { now: NOW })).allowed).toBe(false);
      const released = await Promise.all(
        workers.map((w) => w.call<{ released: number }>({ type: 'release-all', now: NOW })),
      );
      expect(released.reduce((sum, r) => sum + r.released, 0)).toBe(10);
      const again = await Promise.all(
        workers.map((w) => w.call<{ admitted: number }>({ ...call, count: 4 })),
      );
      expect(again.reduce((sum, r) => sum + r.admitted, 0)).toBe(10);
    }, 120_000);
  });
}

describe('HostStore: a worker killed inside a write transaction', () => {
  it('blocks nobody: LMDB recovers its lock, the others decide, and its uncommitted write is gone', async () => {
    const path = tempPath('dead-writer');
    const [holder, other] = await startWorkers(path, 2);
    const store = new HostStore({ path, logger: false });
    const capacity = 1000;
    const limiter = new Limiter({ algorithm: neverRefilled(capacity), store });
    try {
      const marker = join(path, '..', `${Date.now()}-holding`);
      void holder!.call({ type: 'hold-lock', marker, key: 'taken-by-the-dead', capacity }).catch(() => {});
      // The holder is inside its write transaction, holding LMDB's write lock, once the marker exists.
      for (let waited = 0; !existsSync(marker); waited += 20) {
        expect(waited, 'the holder never reached its transaction').toBeLessThan(60_000);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await holder!.kill('SIGKILL');
      // Another process decides (its transactions take the lock the dead one held) ...
      const result = await other!.call<{ admitted: number }>({
        type: 'burst',
        limits: [{ name: 'limit', key: 'after-the-kill', spec: SPECS['fixed-window']! }],
        clients: 8,
        rounds: 2,
        now: NOW,
      });
      expect(result.admitted).toBe(16);
      // ... and so does this one; the dead writer's take was never committed.
      expect(await limiter.check('taken-by-the-dead')).toMatchObject({
        allowed: true,
        remaining: capacity - 1,
      });
    } finally {
      await store.shutdown();
      await Promise.all([holder!.kill(), other!.kill()]);
    }
  }, 120_000);
});

describe('HostStore: SIGKILL of a worker under load', () => {
  it('loses no acknowledged decision, gives no token twice, and the others keep deciding', async () => {
    const path = tempPath('kill-load');
    const keys = Array.from({ length: 8 }, (_, i) => `bucket:${i}`);
    const capacity = 1_000_000;
    /** The tokens each acknowledged take left, per key, from every worker. */
    const left = keys.map(() => [] as number[]);
    const acked = [0, 0, 0, 0];
    const workers = await startWorkers(path, WORKERS, (worker, acks) => {
      acked[worker]! += acks.length;
      for (const [k, remaining] of acks) left[k]!.push(remaining);
    });
    const store = new HostStore({ path, logger: false });
    const waitFor = async (condition: () => boolean, what: string) => {
      for (let waited = 0; !condition(); waited += 20) {
        expect(waited, what).toBeLessThan(60_000);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    try {
      const loads = workers.map((w) =>
        w.call({ type: 'load', keys, capacity, clients: 16 }).catch(() => undefined),
      );
      await waitFor(() => acked.every((n) => n >= 200), 'every worker deciding');
      await workers[0]!.kill('SIGKILL');
      // The others carry on: each acknowledges more decisions after the kill.
      const atKill = [...acked];
      await waitFor(
        () => acked.slice(1).every((n, i) => n >= atKill[i + 1]! + 500),
        'the others deciding after the kill',
      );
      await Promise.all(workers.slice(1).map((w) => w.call({ type: 'stop' })));
      await Promise.all(loads);
      const limiter = new Limiter({ algorithm: neverRefilled(capacity), store });
      for (const [k, key] of keys.entries()) {
        const values = left[k]!;
        // No token was given twice: an acknowledged take lost (rolled back) would have been given again.
        expect(new Set(values).size, key).toBe(values.length);
        // Every acknowledged take is stored.
        const remaining = ((await limiter.peek(key)) as Decision).remaining;
        expect(capacity - remaining, key).toBeGreaterThanOrEqual(values.length);
        expect(Math.min(...values), key).toBeGreaterThanOrEqual(remaining);
      }
    } finally {
      await store.shutdown();
      await Promise.all(workers.map((w) => w.kill()));
    }
  }, 180_000);
});

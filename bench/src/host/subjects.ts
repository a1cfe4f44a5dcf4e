/**
 * The subjects of the host bench, each as its users call it, on the same fixed window (the one
 * algorithm every peer has): sluice's `Limiter.check(key)` awaited on HostStore, MemoryStore and
 * RedisStore (defaults, an ioredis client with `enableOfflineQueue: false`), express-rate-limit's
 * cluster-memory-store (`await store.increment(key)`, `totalHits <= limit`, as its middleware
 * decides) and rate-limiter-flexible's RateLimiterCluster (`await limiter.consume(key)`, a refusal
 * rejects). The IPC peers need their half in the primary process: `primary()` sets it up there.
 */
import {
  ClusterMemoryStorePrimary,
  ClusterMemoryStoreWorker,
} from '@express-rate-limit/cluster-memory-store';
import { type Decision, fixedWindow, Limiter, MemoryStore, type Store } from '@sluice/core';
import { HostStore } from '@sluice/host';
import { RedisStore } from '@sluice/redis';
import type { ClientRateLimitInfo, Options as ErlOptions } from 'express-rate-limit';
import { Redis } from 'ioredis';
import { RateLimiterCluster, RateLimiterClusterMaster } from 'rate-limiter-flexible';

/** What a worker calls: `op(key)` is the library's own call; `allowed` reads its answer. */
export interface Instance {
  op(key: string): unknown;
  allowed(result: unknown): boolean;
  /** Calls the store answered by its failure policy instead of its backend (a run that has some is invalid). */
  failures(): number;
  close(): Promise<void>;
}

/** Where a run's shared state lives, from the orchestrator: the host store's directory, Redis's port. */
export interface Backends {
  readonly hostPath: string;
  readonly redisPort: number;
  /** A prefix of this run (Redis keys, rate-limiter-flexible's keyPrefix): rounds never share state. */
  readonly run: string;
}

export interface Subject {
  readonly id: string;
  readonly label: string;
  /** The exact configuration, printed with the results. */
  readonly config: string;
  /** Whether every worker shares the limit (MemoryStore: each worker has its own). */
  readonly shared: boolean;
  /** Sets up what the subject needs in the cluster's primary (its IPC server), before the fork. */
  primary?(): void;
  /** A fresh limiter in a worker: `limit` per hour. */
  make(limit: number, backends: Backends): Promise<Instance>;
}

const HOUR = 3_600_000;

function sluice(store: Store, limit: number, failures: () => number, close: () => Promise<void>): Instance {
  const limiter = new Limiter({ algorithm: fixedWindow({ limit, window: HOUR }), store });
  return {
    op: (key) => limiter.check(key),
    allowed: (result) => (result as Decision).allowed,
    failures,
    close,
  };
}

const host: Subject = {
  id: 'host',
  label: 'sluice HostStore (LMDB, every worker)',
  config: "new HostStore({ path }); new Limiter({ algorithm: fixedWindow({ limit, window: '1h' }), store })",
  shared: true,
  async make(limit, { hostPath }) {
    const store = new HostStore({ path: hostPath });
    return sluice(
      store,
      limit,
      () => 0,
      () => store.shutdown(),
    );
  },
};

/** HostStore over 8 shards (issue 36): the workers queue per shard, not all for one lock. */
const hostShards: Subject = {
  id: 'host-shards',
  label: 'sluice HostStore over 8 shards (LMDB, every worker)',
  config:
    "new HostStore({ path, shards: 8 }); new Limiter({ algorithm: fixedWindow({ limit, window: '1h' }), store })",
  shared: true,
  async make(limit, { hostPath }) {
    const store = new HostStore({ path: hostPath, shards: 8 });
    return sluice(
      store,
      limit,
      () => 0,
      () => store.shutdown(),
    );
  },
};

const memory: Subject = {
  id: 'memory',
  label: 'sluice MemoryStore (per worker: not one limit)',
  config: 'new MemoryStore(); the same Limiter (each worker enforces its own limit)',
  shared: false,
  async make(limit) {
    const store = new MemoryStore();
    return sluice(
      store,
      limit,
      () => 0,
      async () => store.shutdown(),
    );
  },
};

const redis: Subject = {
  id: 'redis',
  label: 'sluice RedisStore (redis-server on localhost)',
  config:
    'new RedisStore({ client: new Redis({ port, enableOfflineQueue: false }), prefix }) (defaults: 100 ms timeout, failurePolicy local); the same Limiter',
  shared: true,
  async make(limit, { redisPort, run }) {
    const client = new Redis({ port: redisPort, host: '127.0.0.1', enableOfflineQueue: false });
    await new Promise((resolve, reject) => {
      client.once('ready', resolve);
      client.once('error', reject);
    });
    let failures = 0;
    const store = new RedisStore({ client, prefix: `${run}:`, onError: () => failures++ });
    return sluice(
      store,
      limit,
      () => failures,
      async () => {
        await store.shutdown();
        client.disconnect();
      },
    );
  },
};

const erlCluster: Subject = {
  id: 'erl-cluster',
  label: 'express-rate-limit cluster-memory-store (IPC to the primary)',
  config:
    'new ClusterMemoryStoreWorker({ prefix }), init({ windowMs: 3600000 }); (await store.increment(key)).totalHits <= limit (a rejection, no answer within its 1 s, counted as a failure); new ClusterMemoryStorePrimary().init() in the primary',
  shared: true,
  primary() {
    new ClusterMemoryStorePrimary().init();
  },
  async make(limit, { run }) {
    const store = new ClusterMemoryStoreWorker({ prefix: run });
    await store.init({ windowMs: HOUR } as ErlOptions);
    let failures = 0;
    return {
      // No answer from the primary within its 1 s rejects: counted as a failure, not a decision.
      op: (key) =>
        store.increment(key).then(
          (info) => info,
          () => {
            failures++;
            return undefined;
          },
        ),
      allowed: (result) => result !== undefined && (result as ClientRateLimitInfo).totalHits <= limit,
      failures: () => failures,
      close: async () => {},
    };
  },
};

const rlfCluster: Subject = {
  id: 'rlf-cluster',
  label: 'rate-limiter-flexible RateLimiterCluster (IPC to the primary)',
  config:
    'new RateLimiterCluster({ keyPrefix, points: limit, duration: 3600 }) (timeoutMs 5000 by default); await limiter.consume(key): a refusal rejects with its RateLimiterRes, a timeout with an Error (counted as a failure); new RateLimiterClusterMaster() in the primary',
  shared: true,
  primary() {
    new RateLimiterClusterMaster();
  },
  async make(limit, { run }) {
    const limiter = new RateLimiterCluster({ keyPrefix: run, points: limit, duration: 3600 });
    let failures = 0;
    return {
      // A refusal rejects with its RateLimiterRes, a timeout with an Error: both answered here.
      op: (key) =>
        limiter.consume(key).then(
          () => true,
          (reason: unknown) => {
            if (reason instanceof Error) failures++;
            return false;
          },
        ),
      allowed: (result) => result === true,
      failures: () => failures,
      close: async () => {},
    };
  },
};

export const SUBJECTS: readonly Subject[] = [host, hostShards, memory, redis, erlCluster, rlfCluster];

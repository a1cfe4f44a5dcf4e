/** What `app-server.ts` builds, passed as JSON in `SLUICE_APP`. */
export interface AppConfig {
  adapter: 'express' | 'fastify';
  /** Express `trust proxy` / Fastify `trustProxy`; absent: no proxy trusted. */
  trustProxy?: number | boolean | string;
  /** Redis key prefix of every RedisStore in the app. */
  prefix: string;
  /** ms added to `Date.now()` for the stores' clock (clock skew between app servers). */
  clockOffset?: number;
  /** Named connections the routes' stores use. */
  backends: Record<string, BackendSpec>;
  routes: RouteSpec[];
}

export type BackendSpec =
  | { kind: 'memory' }
  | { kind: 'redis'; port: number }
  /** `readme`: the Cluster client exactly as the Redis README sets it up (not connected by hand). */
  | { kind: 'cluster'; ports: number[]; readme?: boolean }
  | { kind: 'sentinel'; sentinels: { host: string; port: number }[]; name: string };

export interface AlgorithmSpec {
  kind: 'fixed-window' | 'sliding-window-log' | 'sliding-window-counter' | 'token-bucket' | 'gcra';
  options: Record<string, unknown>;
}

export interface RouteSpec {
  path: string;
  /** A name in `backends`; each route gets its own store on that connection. */
  backend: string;
  limits: { name: string; key: 'ip' | string; algorithm: AlgorithmSpec }[];
  /** RedisStore `failurePolicy`; `'fallback'` is a fresh `MemoryStore` per route. @default the store's ('local') */
  failurePolicy?: 'local' | 'allow' | 'deny' | 'fallback';
  /** RedisStore `outageShare`. @default 1 */
  outageShare?: number;
  /**
   * The store's failure log goes to the stats (`logs`) instead of `onError` counting: what the
   * default logger would write, line by line. Each line, each failed call (`onError`) and each
   * breaker change is also kept with its time in `events`, so that a test can say why a request
   * was answered by the policy.
   */
  log?: boolean;
  /** RedisStore `timeout`, ms. @default 100 */
  timeout?: number;
  /** @default { failures: 3, cooldown: 1000 } */
  breaker?: { failures: number; cooldown: number } | false;
  time?: 'client' | 'redis';
}

/** What a child reports about itself. */
export interface ChildStats {
  unhandled: string[];
  uncaught: string[];
  /** RedisStore `onError` calls per route path. */
  storeErrors: Record<string, number>;
  /** Last breaker state per route path (absent: never changed). */
  breaker: Record<string, string>;
  /** Lines of the stores' failure logs, per route path (routes with `log`). */
  logs: Record<string, string[]>;
  /** The same lines, every failed call and every breaker change, timed, per route path (routes with `log`). */
  events: Record<string, StoreEvent[]>;
  /** ioredis client status per backend. */
  clients: Record<string, string>;
}

/** Something a route's store said or did, at `at` (the app's `Date.now()`, the clock the test reads too). */
export interface StoreEvent {
  at: number;
  /** `log`: a line of the failure log; `error`: a failed call (`onError`); `breaker`: a breaker changed state. */
  kind: 'log' | 'error' | 'breaker';
  /** The line; the operation, error and breaker state; or the node and its states. */
  text: string;
}

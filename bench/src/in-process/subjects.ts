import {
  type Algorithm,
  type Decision,
  fixedWindow,
  gcra,
  Limiter,
  leakyBucketQueue,
  MemoryStore,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import {
  type ClientRateLimitInfo,
  MemoryStore as ErlMemoryStore,
  type Options as ErlOptions,
} from 'express-rate-limit';
import { RateLimiter } from 'limiter';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { inlineTokenBucket, inlineTokenBucketDecision } from './floor.js';

/**
 * A subject as its users call it: `op(key)` is the library's own call, returned as is (a promise
 * for the peers whose API returns one), and `allowed` reads the answer. The harness awaits `op`
 * inline when `async` (its loop is the user's async function), so no subject gets an `async`
 * wrapper, an extra promise or a tick the others do not.
 */
export interface Instance {
  op(key: string): unknown;
  allowed(result: unknown): boolean;
  close?(): void;
}

export interface Subject {
  readonly id: string;
  readonly label: string;
  /** The exact configuration, printed in the report. */
  readonly config: string;
  /** Awaited by its caller: its API returns a promise, or its README awaits it. */
  readonly async: boolean;
  /** Fresh state: a new limiter and store. `keys` is the most keys it will see. */
  make(keys: number): Instance;
}

/**
 * Limits high enough that no scenario is ever refused: a quota of 10⁹ (a whole run puts well under
 * 10⁸ decisions on the hot key), refilled slowly (1 unit per hour, or 10⁹ per hour for window
 * counters), so that every key's state lives for the whole run: the 10,000-key scenario measures a
 * returning key with live state, for every subject (returning clients whose state goes stale
 * between visits are measured apart: `returning.ts`). Every subject reads the clock once per
 * decision: the peers and sluice read it themselves (sluice's memory store calls `Date.now()`),
 * the floor is handed `Date.now()`; the `-now` rows hand it to sluice too.
 */
export const HIGH = 1_000_000_000;
const HOUR = 3_600_000;
/**
 * Refill rate of the never-refusing buckets: an empty bucket of HIGH refills in HIGH / PER_HOUR
 * hours (1e6 h), within the longest state core accepts (MAX_DURATION, about 317 years).
 */
const PER_HOUR = 1000;

/**
 * The sliding window log holds one entry per millisecond with admissions in its window, so a
 * window of hours at millions of requests per second would hold millions of entries per key. Its
 * window here is 10 ms: the hot key's log holds at most 10 entries, and in the 10,000-key scenario
 * each key is visited every one to a few ms, so its state lives from one visit to the next and
 * stays small, which is the steady state of a log in real use (a short window, or a modest rate).
 * With a window shorter than the time between two visits, every visit would find the key's state
 * expired and reclaimed, and that scenario would measure the store's insert-and-reclaim path
 * instead.
 */
const LOG_WINDOW = 10;

/** The sluice algorithms, with the configurations above. */
export const ALGORITHMS: Record<
  string,
  { config: string; make: () => Algorithm; memoryConfig?: string; memoryMake?: () => Algorithm }
> = {
  'token-bucket': {
    config: `tokenBucket({ capacity: ${HIGH}, refillAmount: ${PER_HOUR}, refillInterval: ${HOUR} })`,
    make: () => tokenBucket({ capacity: HIGH, refillAmount: PER_HOUR, refillInterval: HOUR }),
  },
  gcra: {
    config: `gcra({ rate: ${PER_HOUR}, period: ${HOUR}, burst: ${HIGH} })`,
    make: () => gcra({ rate: PER_HOUR, period: HOUR, burst: HIGH }),
  },
  'fixed-window': {
    config: `fixedWindow({ limit: ${HIGH}, window: ${HOUR} })`,
    make: () => fixedWindow({ limit: HIGH, window: HOUR }),
  },
  'sliding-window-counter': {
    config: `slidingWindowCounter({ limit: ${HIGH}, window: ${HOUR} })`,
    make: () => slidingWindowCounter({ limit: HIGH, window: HOUR }),
  },
  'sliding-window-log': {
    config: `slidingWindowLog({ limit: ${HIGH}, window: ${LOG_WINDOW} })`,
    make: () => slidingWindowLog({ limit: HIGH, window: LOG_WINDOW }),
    // For the memory table each key's one entry must live, as in real use: an hour's window.
    memoryConfig: `slidingWindowLog({ limit: ${HIGH}, window: ${HOUR} })`,
    memoryMake: () => slidingWindowLog({ limit: HIGH, window: HOUR }),
  },
  'leaky-bucket-queue': {
    config: `leakyBucketQueue({ rate: ${PER_HOUR}, period: ${HOUR}, burst: ${HIGH}, queue: 0 })`,
    make: () => leakyBucketQueue({ rate: PER_HOUR, period: HOUR, burst: HIGH, queue: 0 }),
  },
};

/** How a sluice row calls `check`. */
type Call = 'sync' | 'sync-now' | 'await' | 'await-now';

const CALL_IDS: Record<Call, string> = {
  sync: 'sluice',
  'sync-now': 'sluice-now',
  await: 'sluice-await',
  'await-now': 'sluice-await-now',
};

const CALL_LABELS: Record<Call, string> = {
  sync: '',
  'sync-now': ', { now }',
  await: ' (awaited)',
  'await-now': ' (awaited), { now }',
};

const isDecision = (result: unknown) => (result as Decision).allowed;

/**
 * `new Limiter({ algorithm, store: new MemoryStore({ maxKeys }) })`, `check(key)` as the README
 * shows it (the store reads `Date.now()`, as every peer does), or `check(key, { now: Date.now() })`
 * (validated on every call: the `-now` rows show what that costs); awaited or not.
 */
function sluice(name: string, call: Call, forMemory: boolean): Subject {
  const entry = ALGORITHMS[name]!;
  const algorithm =
    forMemory && entry.memoryMake !== undefined
      ? { config: entry.memoryConfig!, make: entry.memoryMake }
      : entry;
  const withNow = call.endsWith('now');
  // Awaited as the README shows it (`await limiter.check(key)`, a promise); not awaited, the
  // synchronous form (`checkSync`, a decision).
  const awaited = call.startsWith('await');
  return {
    id: `${CALL_IDS[call]}:${name}`,
    label: `sluice ${name}${CALL_LABELS[call]}`,
    config: `new Limiter({ algorithm: ${algorithm.config}, store: new MemoryStore({ maxKeys, maxBytes }) }).${awaited ? 'check' : 'checkSync'}(key${withNow ? ', { now: Date.now() }' : ''})${awaited ? ', awaited' : ''}`,
    async: awaited,
    make(keys) {
      // Room for every key: the memory table divides the heap by the keys it sent, so none may be
      // evicted (at 1,000,000 keys the default maxBytes of 64 MiB held about a third of them).
      const store = new MemoryStore({
        maxKeys: Math.max(100_000, keys),
        maxBytes: Math.max(2 ** 26, keys * 4096),
      });
      const limiter = new Limiter({ algorithm: algorithm.make(), store });
      return {
        op: awaited
          ? withNow
            ? (key) => limiter.check(key, { now: Date.now() })
            : (key) => limiter.check(key)
          : withNow
            ? (key) => limiter.checkSync(key, { now: Date.now() })
            : (key) => limiter.checkSync(key),
        allowed: isDecision,
        close: () => store.shutdown(),
      };
    },
  };
}

/** The pure algorithm over a bare `Map`, without the limiter or the store: for diagnosis. */
function raw(name: string): Subject {
  const algorithm = ALGORITHMS[name]!;
  return {
    id: `raw:${name}`,
    label: `raw ${name} + Map (diagnosis)`,
    config: `${algorithm.config}.consume(map.get(key), Date.now(), 1, name), then map.set(key, state)`,
    async: false,
    make() {
      const a = algorithm.make();
      const map = new Map<string, unknown>();
      return {
        op: (key) => {
          const step = a.consume(map.get(key), Date.now(), 1, 'raw');
          map.set(key, step.state);
          return step.decision;
        },
        allowed: isDecision,
      };
    },
  };
}

const floor: Subject = {
  id: 'floor',
  label: 'inline Map token bucket (floor)',
  config: `15-line token bucket: Map<key, { tokens, last }> mutated in place, capacity ${HIGH}, ${PER_HOUR} tokens/hour, Date.now()`,
  async: false,
  make() {
    const take = inlineTokenBucket(HIGH, PER_HOUR / HOUR);
    return { op: (key) => take(key, Date.now()), allowed: (result) => result as boolean };
  },
};

const floorDecision: Subject = {
  id: 'floor-decision',
  label: 'inline Map token bucket returning a decision object (diagnosis)',
  config: `the floor, returning { allowed, limit, remaining, resetAfter, retryAfter } instead of a boolean`,
  async: false,
  make() {
    const take = inlineTokenBucketDecision(HIGH, PER_HOUR / HOUR);
    return { op: (key) => take(key, Date.now()), allowed: isDecision };
  },
};

/**
 * The decision floor, awaited: what `await` alone costs any synchronous API that answers with a
 * fresh object (V8 wraps it in a new promise and looks `then` up along its prototype chain, which
 * costs more than awaiting the promise an `async` function returns). For diagnosis of the awaited
 * rows: no synchronous limiter awaited can go faster than this.
 */
const floorDecisionAwaited: Subject = {
  ...floorDecision,
  id: 'floor-decision-await',
  label: 'inline Map token bucket returning a decision object, awaited (diagnosis)',
  config: 'the floor returning a decision object, awaited',
  async: true,
};

/**
 * The decision floor inside an `async` function, awaited: the same work and the same fresh object,
 * handed to `await` as the promise an `async` function returns instead of as a plain value. For
 * diagnosis of the awaited rows. `await` of a plain object looks `then` up on it (is it a
 * thenable?) by a generic lookup along its prototype chain; an `async` function that returns an
 * object whose shape V8 knows at that point (one it has just built as a literal, or read fields of,
 * as express-rate-limit's `increment` reads and writes its client's before returning it) has that
 * lookup folded away. Micro-benchmarks on Node 20, one call site each: the async-function form
 * about 20–30% faster per awaited call than the plain value; a class instance built by a
 * constructor V8 does not inline gets no such fold, and then both forms cost the same. This row
 * beside `floor-decision-await` shows that gap on the harness; no library in the table is called
 * this way.
 */
const floorDecisionAsync: Subject = {
  id: 'floor-decision-async',
  label: 'inline Map token bucket returning a decision object from an async function, awaited (diagnosis)',
  config: 'the floor returning a decision object, wrapped in an async function, awaited',
  async: true,
  make() {
    const take = inlineTokenBucketDecision(HIGH, PER_HOUR / HOUR);
    return { op: async (key) => take(key, Date.now()), allowed: isDecision };
  },
};

const rlf: Subject = {
  id: 'rate-limiter-flexible',
  label: 'rate-limiter-flexible RateLimiterMemory',
  config: `await new RateLimiterMemory({ points: ${HIGH}, duration: 3600 }).consume(key) (rejects when refused)`,
  async: true,
  make() {
    const limiter = new RateLimiterMemory({ points: HIGH, duration: 3600 });
    // A refusal rejects: the harness counts a rejection as refused.
    return { op: (key) => limiter.consume(key), allowed: () => true };
  },
};

const erl: Subject = {
  id: 'express-rate-limit',
  label: 'express-rate-limit MemoryStore',
  config: `new MemoryStore(), init({ windowMs: ${HOUR} }), (await store.increment(key)).totalHits <= ${HIGH}`,
  async: true,
  make() {
    const store = new ErlMemoryStore();
    store.init({ windowMs: HOUR } as ErlOptions);
    return {
      op: (key) => store.increment(key),
      allowed: (result) => (result as ClientRateLimitInfo).totalHits <= HIGH,
      close: () => store.shutdown(),
    };
  },
};

const limiterPeer: Subject = {
  id: 'limiter',
  label: 'limiter RateLimiter (one per key)',
  config: `Map<key, new RateLimiter({ tokensPerInterval: ${HIGH}, interval: 'hour' })>, tryRemoveTokens(1)`,
  async: false,
  make() {
    const limiters = new Map<string, RateLimiter>();
    return {
      op: (key) => {
        let limiter = limiters.get(key);
        if (limiter === undefined) {
          limiter = new RateLimiter({ tokensPerInterval: HIGH, interval: 'hour' });
          limiters.set(key, limiter);
        }
        return limiter.tryRemoveTokens(1);
      },
      allowed: (result) => result as boolean,
    };
  },
};

export const PEERS: readonly Subject[] = [rlf, erl, limiterPeer];

/** `forMemory`: the configuration of the memory table, where it differs (the log's window). */
export function subject(id: string, forMemory = false): Subject {
  if (id === 'floor') return floor;
  if (id === 'floor-decision') return floorDecision;
  if (id === 'floor-decision-await') return floorDecisionAwaited;
  if (id === 'floor-decision-async') return floorDecisionAsync;
  const peer = PEERS.find((p) => p.id === id);
  if (peer !== undefined) return peer;
  const [kind, name] = id.split(':') as [string, string];
  if (!(name in ALGORITHMS)) throw new Error(`unknown subject ${id}`);
  const call = (Object.keys(CALL_IDS) as Call[]).find((c) => CALL_IDS[c] === kind);
  if (call !== undefined) return sluice(name, call, forMemory);
  if (kind === 'raw') return raw(name);
  throw new Error(`unknown subject ${id}`);
}

import { spawnSync } from 'node:child_process';
import {
  type Decision,
  fixedWindow,
  gcra,
  Limiter,
  type Store,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import type { Options as ErlOptions } from 'express-rate-limit';
import { Redis } from 'ioredis';
import { RedisStore as RateLimitRedisStore } from 'rate-limit-redis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import type { Cores } from '../lib/pinning.js';
import { startRedis } from '../lib/redis-server.js';
import { formatRate, formatRatio, median } from '../lib/stats.js';
import { type Section, table } from '../report/markdown.js';
import type { Chart } from '../report/svg.js';

export interface RedisResult {
  readonly markdown: string;
  readonly configs: string;
  readonly charts: readonly Chart[];
  readonly rows: readonly {
    id: string;
    pipelining: boolean;
    opsPerSecond: number;
    ratioToFloor: number;
    storeErrors: number;
  }[];
}

const CONCURRENCY = 32;
const KEYS = Array.from({ length: 10_000 }, (_, i) => `user:${i}`);
const HIGH = 1_000_000_000;
const HOUR = 3_600_000;
/**
 * Refill rate of the never-refusing buckets: an empty bucket of HIGH refills in HIGH / PER_HOUR
 * hours (1e6 h), within the longest state core accepts (MAX_DURATION, about 317 years).
 */
const PER_HOUR = 1000;

/**
 * The floor: the least Lua that is a token bucket (one hash per key, HMGET + HSET + PEXPIRE),
 * called by EVALSHA through ioredis `defineCommand`, without a decision object.
 */
const FLOOR_LUA = `
local capacity, perMs, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local b = redis.call('HMGET', KEYS[1], 't', 'l')
local tokens = tonumber(b[1]) or capacity
local last = tonumber(b[2]) or now
tokens = math.min(capacity, tokens + (now - last) * perMs)
local ok = 0
if tokens >= 1 then tokens = tokens - 1; ok = 1 end
redis.call('HSET', KEYS[1], 't', tokens, 'l', now)
redis.call('PEXPIRE', KEYS[1], 3600000)
return ok`;

type RedisOp = (i: number) => Promise<boolean>;
interface RedisSubject {
  readonly id: string;
  readonly label: string;
  readonly config: string;
  make(client: Redis): RedisOp;
}

export type RedisStoreCtor = new (options: {
  client: Redis;
  prefix?: string;
  denyCache?: number;
  timeout?: number;
  breaker?: false;
  onError?: () => void;
}) => Store;

/**
 * Store errors seen per subject. The store answers a timed-out call by its failure policy without
 * Redis, so a row with errors measured the policy, not Redis: it is reported as invalid.
 */
export const errors = new Map<string, number>();

function sluice(
  RedisStore: RedisStoreCtor,
  id: string,
  label: string,
  config: string,
  build: (store: Store) => Limiter,
  keyOf: (i: number) => string,
  denyCache = 0,
): RedisSubject {
  return {
    id,
    label,
    config,
    make(client) {
      // No breaker and a long timeout: this measures Redis, not the failure policy.
      const store = new RedisStore({
        client,
        prefix: `sluice-${id}:`,
        denyCache,
        timeout: 10_000,
        breaker: false,
        onError: () => errors.set(id, (errors.get(id) ?? 0) + 1),
      });
      const limiter = build(store);
      return async (i) => ((await limiter.check(keyOf(i))) as Decision).allowed;
    },
  };
}

/** Abusive keys, each refused after its first 10 requests (all of them within the warm-up). */
const ABUSERS = 100;
/** Ordinary keys so far: each is new (a counter across rounds, so no round sees an earlier one's). */
let ordinary = 0;
/**
 * Abusive traffic: 9 requests in 10 from `ABUSERS` keys far over their limit (in turn), 1 in 10
 * from a key never seen before, which no local cache can answer.
 */
const abusive = (i: number) =>
  i % 10 === 0 ? `fresh:${ordinary++}` : `abuser:${Math.floor(i / 10) % ABUSERS}`;
/** The abusive rows' limit: 10 per hour (rate-limiter-flexible: 10 points per 3600 s). */
const ABUSIVE_LIMIT = 10;

export function subjects(RedisStore: RedisStoreCtor | undefined): RedisSubject[] {
  const list: RedisSubject[] = [
    {
      id: 'ping',
      label: 'PING round trip (scale)',
      config: 'client.ping()',
      make: (c) => async () => (await c.ping()) === 'PONG',
    },
    {
      id: 'floor',
      label: 'EVALSHA minimal token bucket (floor)',
      config: `defineCommand of a 9-line Lua token bucket (HMGET/HSET/PEXPIRE), capacity ${HIGH}, ${PER_HOUR} tokens/hour`,
      make(client) {
        client.defineCommand('benchFloor', { numberOfKeys: 1, lua: FLOOR_LUA });
        const call = (
          client as unknown as Record<string, (...a: unknown[]) => Promise<number>>
        ).benchFloor!.bind(client);
        return async (i) =>
          (await call(`floor:${KEYS[i % KEYS.length]}`, HIGH, PER_HOUR / HOUR, Date.now())) === 1;
      },
    },
  ];
  if (RedisStore !== undefined) {
    const key = (i: number) => KEYS[i % KEYS.length]!;
    list.push(
      sluice(
        RedisStore,
        'sluice:token-bucket',
        'sluice token-bucket',
        `tokenBucket({ capacity: ${HIGH}, refillAmount: ${PER_HOUR}, refillInterval: ${HOUR} }) on new RedisStore({ client })`,
        (store) =>
          new Limiter({
            algorithm: tokenBucket({ capacity: HIGH, refillAmount: PER_HOUR, refillInterval: HOUR }),
            store,
          }),
        key,
      ),
      sluice(
        RedisStore,
        'sluice:gcra',
        'sluice gcra',
        `gcra({ rate: ${PER_HOUR}, period: ${HOUR}, burst: ${HIGH} })`,
        (store) => new Limiter({ algorithm: gcra({ rate: PER_HOUR, period: HOUR, burst: HIGH }), store }),
        key,
      ),
      sluice(
        RedisStore,
        'sluice:fixed-window',
        'sluice fixed-window',
        `fixedWindow({ limit: ${HIGH}, window: ${HOUR} }) (rate-limit-redis's algorithm)`,
        (store) => new Limiter({ algorithm: fixedWindow({ limit: HIGH, window: HOUR }), store }),
        key,
      ),
      sluice(
        RedisStore,
        'sluice:sliding-window-log',
        'sluice sliding-window-log',
        `slidingWindowLog({ limit: ${HIGH}, window: 1000 })`,
        (store) => new Limiter({ algorithm: slidingWindowLog({ limit: HIGH, window: 1000 }), store }),
        key,
      ),
      sluice(
        RedisStore,
        'sluice:layered',
        'sluice 3 layered limits',
        `limits: tokenBucket(${HIGH}, ${PER_HOUR}/hour) + gcra(${PER_HOUR}/hour, burst ${HIGH}) + fixedWindow(${HIGH}/hour)`,
        (store) =>
          new Limiter({
            limits: [
              {
                name: 'burst',
                algorithm: tokenBucket({ capacity: HIGH, refillAmount: PER_HOUR, refillInterval: HOUR }),
              },
              { name: 'meter', algorithm: gcra({ rate: PER_HOUR, period: HOUR, burst: HIGH }) },
              { name: 'hourly', algorithm: fixedWindow({ limit: HIGH, window: HOUR }) },
            ],
            store,
          }),
        key,
      ),
      sluice(
        RedisStore,
        'sluice:abusive',
        'sluice, 90% abusive, deny cache off',
        `tokenBucket({ capacity: ${ABUSIVE_LIMIT}, refillInterval: 3600000 }); 90% of requests from ${ABUSERS} keys over their limit, 10% from keys never seen before`,
        (store) =>
          new Limiter({ algorithm: tokenBucket({ capacity: ABUSIVE_LIMIT, refillInterval: HOUR }), store }),
        abusive,
      ),
      sluice(
        RedisStore,
        'sluice:abusive-deny-cache',
        'sluice, 90% abusive, deny cache on',
        'same, new RedisStore({ client, denyCache: 10000 })',
        (store) =>
          new Limiter({ algorithm: tokenBucket({ capacity: ABUSIVE_LIMIT, refillInterval: HOUR }), store }),
        abusive,
        10_000,
      ),
    );
  }
  list.push(
    {
      id: 'rate-limiter-flexible',
      label: 'rate-limiter-flexible RateLimiterRedis',
      config: `new RateLimiterRedis({ storeClient: client, points: ${HIGH}, duration: 3600 }).consume(key)`,
      make(client) {
        const limiter = new RateLimiterRedis({
          storeClient: client,
          points: HIGH,
          duration: 3600,
          keyPrefix: 'rlf',
        });
        return (i) =>
          limiter.consume(KEYS[i % KEYS.length]!).then(
            () => true,
            () => false,
          );
      },
    },
    rateLimiterFlexibleAbusive('rate-limiter-flexible:abusive', 'rate-limiter-flexible, 90% abusive', {}),
    rateLimiterFlexibleAbusive(
      'rate-limiter-flexible:abusive-in-memory-block',
      'rate-limiter-flexible, 90% abusive, in-memory block',
      { inMemoryBlockOnConsumed: ABUSIVE_LIMIT },
    ),
    {
      id: 'rate-limit-redis',
      label: 'rate-limit-redis (express-rate-limit store)',
      config: `new RedisStore({ sendCommand: (...args) => client.call(...args) }), init({ windowMs: ${HOUR} }), increment(key)`,
      make(client) {
        const store = new RateLimitRedisStore({
          sendCommand: (command: string, ...args: string[]) => client.call(command, ...args) as never,
          prefix: 'rlr:',
        });
        store.init({ windowMs: HOUR } as ErlOptions);
        return async (i) => (await store.increment(KEYS[i % KEYS.length]!)).totalHits <= HIGH;
      },
    },
  );
  return list;
}

/**
 * rate-limiter-flexible on the abusive traffic, awaited as its users await it (`consume` rejects
 * when refused). `inMemoryBlockOnConsumed` is its local deny cache: a key that reached its points
 * is refused in memory until its window ends, without a round trip.
 */
function rateLimiterFlexibleAbusive(
  id: string,
  label: string,
  extra: { inMemoryBlockOnConsumed?: number },
): RedisSubject {
  return {
    id,
    label,
    config: `new RateLimiterRedis({ storeClient: client, points: ${ABUSIVE_LIMIT}, duration: 3600${extra.inMemoryBlockOnConsumed === undefined ? '' : `, inMemoryBlockOnConsumed: ${extra.inMemoryBlockOnConsumed}`} }).consume(key), the same traffic`,
    make(client) {
      const limiter = new RateLimiterRedis({
        storeClient: client,
        points: ABUSIVE_LIMIT,
        duration: 3600,
        keyPrefix: id,
        ...extra,
      });
      return (i) =>
        limiter.consume(abusive(i)).then(
          () => true,
          () => false,
        );
    },
  };
}

/** `CONCURRENCY` loops each awaiting one decision at a time, for `ms`. */
export async function drive(op: RedisOp, ms: number): Promise<number> {
  let next = 0;
  let done = 0;
  const end = performance.now() + ms;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        await op(next++);
        done++;
      }
    }),
  );
  return done / ((performance.now() - start) / 1000);
}

export async function redis(
  settings: { ms: number; rounds: number; cores?: Cores | undefined },
  log: (line: string) => void,
): Promise<Section<RedisResult>> {
  let RedisStore: RedisStoreCtor | undefined;
  try {
    const mod = (await import('@sluice/redis')) as { RedisStore?: RedisStoreCtor };
    RedisStore = typeof mod.RedisStore === 'function' ? mod.RedisStore : undefined;
  } catch {
    RedisStore = undefined;
  }
  if (RedisStore === undefined)
    log('  @sluice/redis exports no RedisStore (build it first): sluice rows not yet available');
  if (spawnSync('redis-server', ['--version']).error !== undefined)
    return { status: 'skipped', reason: 'redis-server is not installed' };
  // The client (this process) is what is measured: redis-server gets the other core.
  const server = await startRedis(settings.cores?.subject);
  const rows: RedisResult['rows'][number][] = [];
  try {
    for (const pipelining of [false, true]) {
      const client = new Redis({ port: server.port, host: '127.0.0.1', enableAutoPipelining: pipelining });
      const list = subjects(RedisStore).map((s) => ({ s, op: s.make(client), rounds: [] as number[] }));
      errors.clear();
      for (const x of list) await drive(x.op, Math.min(300, settings.ms)); // same warm-up for each
      for (let r = 0; r < settings.rounds; r++)
        for (const x of list) x.rounds.push(await drive(x.op, settings.ms));
      const floor = median(list.find((x) => x.s.id === 'floor')!.rounds);
      for (const x of list) {
        const ops = median(x.rounds);
        const storeErrors = errors.get(x.s.id) ?? 0;
        rows.push({ id: x.s.id, pipelining, opsPerSecond: ops, ratioToFloor: ops / floor, storeErrors });
        log(
          `  ${pipelining ? 'pipelined ' : ''}${x.s.label}: ${formatRate(ops)}/s (${formatRatio(ops / floor)})`,
        );
      }
      client.disconnect();
    }
  } finally {
    await server.stop();
  }
  const list = subjects(RedisStore);
  const cell = (id: string, pipelining: boolean) =>
    rows.find((r) => r.id === id && r.pipelining === pipelining)!;
  const markdown = [
    `One local \`redis-server\` (loopback, no persistence), one ioredis client, ${CONCURRENCY} requests in flight, 10,000 keys; medians of ${settings.rounds} interleaved rounds of ${settings.ms} ms. Ratios are to the raw EVALSHA token bucket measured in the same run.${RedisStore === undefined ? ' **sluice rows: not yet available** (@sluice/redis exports no RedisStore in its build).' : ''}`,
    '',
    table(
      ['subject', 'decisions/s', '× floor', 'with auto-pipelining', '× floor'],
      list.map((s) => {
        const a = cell(s.id, false);
        const b = cell(s.id, true);
        const invalid = (c: typeof a) => `invalid: ${c.storeErrors} store errors`;
        return [
          s.label,
          ...(a.storeErrors > 0
            ? [invalid(a), '']
            : [formatRate(a.opsPerSecond), formatRatio(a.ratioToFloor)]),
          ...(b.storeErrors > 0
            ? [invalid(b), '']
            : [formatRate(b.opsPerSecond), formatRatio(b.ratioToFloor)]),
        ];
      }),
    ),
  ].join('\n');
  const configs = ['Redis subjects:', '', ...list.map((s) => `- **${s.label}**: \`${s.config}\``)].join('\n');
  const charts: Chart[] = [
    {
      title: 'Redis decisions/s (auto-pipelining on): ratio to a raw EVALSHA token bucket',
      subtitle: `one ioredis client, ${CONCURRENCY} in flight, 10,000 keys; higher is better`,
      bars: list
        .filter((s) => s.id !== 'ping')
        .filter((s) => cell(s.id, true).storeErrors === 0)
        .map((s) => ({
          label: s.label.replace(' (floor)', ''),
          value: cell(s.id, true).ratioToFloor,
          kind: s.id === 'floor' ? 'reference' : s.id.startsWith('sluice') ? 'sluice' : 'peer',
        })),
    },
  ];
  return { status: 'measured', result: { markdown, configs, charts, rows } };
}

import { RedisStore } from '@sluice/redis';
import { StoreBackend } from '@sluice/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Cluster, connectCluster, connectRedis, type Redis, uniquePrefix } from '../redis/clients.js';
import { d, ownClient, type RlsClient, type RlsSubject, startRls } from './rls-harness.js';

// A descriptor's `hits_addend` of 0 looks without taking: it answers the descriptor's status as
// it stands (what envoyproxy/ratelimit's INCRBY 0 reads), on every backend alike. Each algorithm
// is driven to the same states (fresh, part used, full, refused) and looked at after each; the
// look never changes what the next look or take sees. The published proto predates the field,
// so the client is our transcription (ownClient).

const CONFIG = {
  'look.yaml': `
domain: look
descriptors:
  - key: fixed
    rate_limit: { unit: minute, requests_per_unit: 4 }
  - key: sliding
    rate_limit: { algorithm: sliding_window_counter, unit: minute, requests_per_unit: 4 }
  - key: log
    rate_limit: { algorithm: sliding_window_log, unit: minute, requests_per_unit: 4 }
  - key: bucket
    rate_limit: { algorithm: token_bucket, unit: minute, requests_per_unit: 4 }
  - key: gcra
    rate_limit: { algorithm: gcra, unit: minute, requests_per_unit: 4, burst: 4 }
`,
  'look-all.yaml': `
domain: look_all
all_or_nothing: true
descriptors:
  - key: a
    rate_limit: { unit: minute, requests_per_unit: 4 }
  - key: b
    rate_limit: { unit: minute, requests_per_unit: 4 }
`,
};

const T = Date.UTC(2030, 5, 1, 12, 0, 10);
const KEYS = ['fixed', 'sliding', 'log', 'bucket', 'gcra'] as const;

function look(key: string, value: string) {
  return { ...d(key, value), hits_addend: { value: 0 } };
}

type Connect = (() => Promise<Redis | Cluster>) | undefined;

describe.each([
  ['LMDB', undefined],
  ['Redis', () => connectRedis()],
  ['Redis Cluster', () => connectCluster()],
] as [string, Connect][])('hits_addend 0 on %s', (_name, connect) => {
  let s: RlsSubject;
  let c: RlsClient;
  let client: Redis | Cluster | undefined;

  beforeAll(async () => {
    client = await connect?.();
    const prefix = uniquePrefix('rls-look');
    s = await startRls(
      CONFIG,
      {},
      client === undefined
        ? undefined
        : (clock) =>
            new StoreBackend(
              new RedisStore({
                client: client!,
                prefix,
                failurePolicy: 'deny',
                timeout: 10_000,
                breaker: false,
              }),
              clock,
              'redis',
            ),
      T,
    );
    c = ownClient(s.port);
  }, 60_000);
  afterAll(async () => {
    c.close();
    await s.stop();
    client?.disconnect();
  });

  it.each(KEYS)('%s: a look reads the status and takes nothing', async (key) => {
    const value = `v-${key}`;
    const seen = async () => (await c.should('look', [look(key, value)])).statuses[0]!;
    const fresh = await seen();
    expect(fresh).toMatchObject({
      code: 'OK',
      limit_remaining: 4,
      current_limit: { requests_per_unit: 4, unit: 'MINUTE' },
    });
    expect(fresh.duration_until_reset).not.toBeNull();
    expect(await seen()).toMatchObject({ code: 'OK', limit_remaining: 4 });

    expect((await c.should('look', [d(key, value)], 3)).statuses[0]).toMatchObject({
      code: 'OK',
      limit_remaining: 1,
    });
    expect(await seen()).toMatchObject({ code: 'OK', limit_remaining: 1 });
    expect(await seen()).toMatchObject({ code: 'OK', limit_remaining: 1 });

    // The last unit is still there to take after two looks.
    expect((await c.should('look', [d(key, value)])).statuses[0]).toMatchObject({
      code: 'OK',
      limit_remaining: 0,
    });
    // Full, not past it: OK with nothing left, as INCRBY 0 reads a count equal to the limit there.
    expect(await seen()).toMatchObject({ code: 'OK', limit_remaining: 0 });
    expect((await c.should('look', [d(key, value)])).overall_code).toBe('OVER_LIMIT');
    // Nothing left: the look says so, and still takes nothing (the next take is refused as before).
    expect(await seen()).toMatchObject({ limit_remaining: 0 });
    expect((await c.should('look', [d(key, value)])).overall_code).toBe('OVER_LIMIT');
  });

  it('a look beside a take in one request: the look takes nothing, the take takes', async () => {
    const r = await c.should('look', [look('fixed', 'pair'), d('fixed', 'pair')]);
    expect(r.statuses.map((x) => x.limit_remaining)).toEqual([4, 3]);
    expect((await c.should('look', [look('fixed', 'pair')])).statuses[0]!.limit_remaining).toBe(3);
  });

  it('all_or_nothing: a look never refuses the batch and is not spent when the batch takes', async () => {
    await c.should('look_all', [d('a', 'x')], 4);
    // b is fresh: the look at the full a is not a take, so b still takes.
    const r = await c.should('look_all', [look('a', 'x'), d('b', 'x')]);
    expect(r.statuses.map((x) => x.limit_remaining)).toEqual([0, 3]);
    expect(r.statuses[1]!.code).toBe('OK');
    expect((await c.should('look_all', [look('b', 'x')])).statuses[0]!.limit_remaining).toBe(3);
  });

  it('the per-descriptor counters: a look adds no hits', async () => {
    await c.should('look', [look('fixed', 'stats'), look('fixed', 'stats')]);
    expect(s.rls.counters()['look.fixed']?.totalHits ?? 0).toBe(
      // The hits taken above on fixed, by every test before this one (3 + 1 + 1 + 1 + 1).
      7,
    );
  });
});

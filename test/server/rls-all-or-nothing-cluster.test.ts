import { RedisStore } from '@sluice/redis';
import { StoreBackend } from '@sluice/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Cluster, connectCluster, uniquePrefix } from '../redis/clients.js';
import { d, ownClient, type RlsClient, type RlsSubject, startRls } from './rls-harness.js';

// all_or_nothing on a Redis Cluster whose counters of one request live in different hash slots,
// on different primaries: RedisStore splits the batch by slot and gives back what the admitting
// slots took when another refused (its README's "Cluster: the exact guarantee"). The request is
// admitted only when every descriptor admits, and a refused request leaves nothing behind, even
// with two replicas racing on the same counters. The slots are the Cluster's own (CLUSTER KEYSLOT).

const CONFIG = {
  'aon.yaml': `
domain: aon
all_or_nothing: true
descriptors:
  - key: wide
    rate_limit: { unit: minute, requests_per_unit: 100 }
  - key: narrow
    rate_limit: { unit: minute, requests_per_unit: 20 }
  - key: smooth
    rate_limit: { algorithm: token_bucket, unit: minute, requests_per_unit: 100 }
`,
  'each.yaml': `
domain: each
descriptors:
  - key: wide
    rate_limit: { unit: minute, requests_per_unit: 100 }
  - key: narrow
    rate_limit: { unit: minute, requests_per_unit: 20 }
`,
};

const T = Date.UTC(2030, 5, 1, 12, 0, 10);

function look(key: string, value: string) {
  return { ...d(key, value), hits_addend: { value: 0 } };
}

describe('all_or_nothing across Redis Cluster slots', () => {
  const clients: Cluster[] = [];
  const stores: RedisStore[] = [];
  const replicas: RlsSubject[] = [];
  let own: RlsClient;

  beforeAll(async () => {
    const prefix = uniquePrefix('rls-aon');
    for (let i = 0; i < 2; i++) {
      const client = await connectCluster();
      clients.push(client);
      const store = new RedisStore({
        client,
        prefix,
        failurePolicy: 'deny',
        timeout: 10_000,
        breaker: false,
      });
      stores.push(store);
      replicas.push(await startRls(CONFIG, {}, (clock) => new StoreBackend(store, clock, 'redis'), T));
    }
    own = ownClient(replicas[0]!.port);
  }, 60_000);
  afterAll(async () => {
    own.close();
    for (const r of replicas) await r.stop();
    for (const c of clients) c.disconnect();
  });

  /** The primary serving the slot of a descriptor's counter in `domain`, by the Cluster's own hashing. */
  async function primaryOf(domain: string, key: string, value: string): Promise<string> {
    const client = clients[0]!;
    const redisKey = stores[0]!.keyFor(undefined, `${domain}\0${key}\0${value}`);
    const slot = Number(await client.cluster('KEYSLOT', redisKey));
    const owner = (client as unknown as { slots: string[][] }).slots[slot]?.[0];
    if (owner === undefined) throw new Error(`no owner for slot ${slot}`);
    return owner;
  }

  /** A value whose `key` and `narrow` counters sit on different primaries in `domain`. */
  async function splitValue(domain: string, tag: string, key = 'wide'): Promise<string> {
    for (let i = 0; i < 100; i++) {
      const value = `${tag}-${i}`;
      if ((await primaryOf(domain, key, value)) !== (await primaryOf(domain, 'narrow', value))) return value;
    }
    throw new Error('no value splits the two counters across primaries');
  }

  it('a request refused by one descriptor spends none of the others, though they live on another primary', async () => {
    const v = await splitValue('aon', 'seq');
    const c = replicas[0]!.client();
    // narrow takes 20 in one request; wide has 80 left after it.
    const first = await c.should('aon', [d('wide', v), d('narrow', v)], 20);
    expect(first.statuses.map((s) => [s.code, s.limit_remaining])).toEqual([
      ['OK', 80],
      ['OK', 0],
    ]);
    for (let i = 0; i < 5; i++) {
      const r = await c.should('aon', [d('wide', v), d('narrow', v)]);
      expect(r.overall_code).toBe('OVER_LIMIT');
      expect(r.statuses[1]!.code).toBe('OVER_LIMIT');
    }
    // wide, on the other primary, was given back each time: still 80.
    const after = await own.should('aon', [look('wide', v)]);
    expect(after.statuses[0]!.limit_remaining).toBe(80);
  });

  it('the default (each descriptor on its own) does spend the others: the contrast', async () => {
    const v = await splitValue('each', 'seq');
    const c = replicas[0]!.client();
    await c.should('each', [d('wide', v), d('narrow', v)], 20);
    for (let i = 0; i < 5; i++) await c.should('each', [d('wide', v), d('narrow', v)]);
    expect((await own.should('each', [look('wide', v)])).statuses[0]!.limit_remaining).toBe(75);
  });

  it.each(['wide', 'smooth'])(
    '200 concurrent requests over two replicas: exactly the narrow limit admitted, %s holds exactly what was admitted',
    async (other) => {
      const v = await splitValue('aon', `race-${other}`, other);
      const a = replicas[0]!.client();
      const b = replicas[1]!.client();
      const answers = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          (i % 2 === 0 ? a : b).should('aon', [d(other, v), d('narrow', v)]),
        ),
      );
      const admitted = answers.filter((r) => r.overall_code === 'OK').length;
      // `other` (100) never refuses, so narrow alone decides: exactly its 20.
      expect(admitted).toBe(20);
      // The 180 refused requests each took a unit from `other` on its primary and gave it back.
      expect((await own.should('aon', [look(other, v)])).statuses[0]!.limit_remaining).toBe(100 - 20);
    },
    60_000,
  );
});

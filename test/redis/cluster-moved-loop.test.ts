/**
 * A Cluster primary that is gone (SIGKILLed, no replica to take its slots): the live nodes still
 * hold it as the slots' owner and answer `MOVED` to it. ioredis, with the README's setup
 * (`retryDelayOnClusterDown: 0`), chases the slot between a live node's `MOVED` and the dead node's
 * closed connection until `maxRedirections`, and rejects with "Too many Cluster redirections. Last
 * error: …" naming whichever came last: `ReplyError: MOVED …` or `Error: Connection is closed.`
 * (about half each, as ioredis picks a random node after a closed connection). Both are the node
 * being away. Seen in test/reliability/cluster-failover.test.ts: the MOVED-ended loops counted as
 * the node answering, and its breaker opened only after 5 calls that ended on the closed connection.
 *
 * Deterministic: no replica and `cluster-require-full-coverage no`, so the dead node keeps its
 * slots and the cluster stays up (never `CLUSTERDOWN`) for as long as the test runs; a generous
 * store timeout keeps a loaded machine's slow answer out of the verdict. Each round is a fresh
 * store whose breaker opens on one counted failure, so every failed call is judged on its own;
 * rounds go on until both endings were seen (each is about one in two, so a few rounds).
 */
import { fixedWindow, Limiter } from '@sluice/core';
import { type BreakerState, RedisStore, type RedisStoreErrorEvent } from '@sluice/redis';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSlot } from '../../packages/redis/src/slot.js';
import { type RedisProcess, startCluster } from '../setup/redis-server.js';

const MOVED_LOOP = /^Too many Cluster redirections\. Last error: ReplyError: MOVED /;
const CLOSED_LOOP = /^Too many Cluster redirections\. Last error: Error: Connection is closed\.$/;

describe('RedisStore on a Cluster whose primary is gone', () => {
  let nodes: RedisProcess[];
  beforeAll(async () => {
    nodes = await startCluster({ args: ['--cluster-require-full-coverage', 'no'] });
  }, 60_000);
  afterAll(async () => {
    await Promise.all((nodes ?? []).map((node) => node.stop()));
  });

  it("with the README setup: a redirection loop to the dead node counts as a failure, however it ends (the node's breaker opens)", async () => {
    const prefix = `moved${Math.random().toString(36).slice(2, 8)}:`;
    const client = new Cluster(
      nodes.map((node) => ({ host: '127.0.0.1', port: node.port })),
      { enableOfflineQueue: false, retryDelayOnFailover: 10, retryDelayOnClusterDown: 0 },
    );
    client.on('error', () => {});
    const algorithm = fixedWindow({ limit: 100, window: '1h' });
    /** One call on `k` through a fresh store: what it answered, the error, the breaker's changes. */
    const round = async () => {
      const errors: string[] = [];
      const changes: [BreakerState, string | undefined][] = [];
      const store = new RedisStore({
        client,
        prefix,
        timeout: 5_000,
        failurePolicy: 'deny',
        breaker: { failures: 1, cooldown: 60_000 },
        onBreakerChange: (state, _previous, node) => changes.push([state, node]),
        onError: (event: RedisStoreErrorEvent) => errors.push((event.error as Error).message),
      });
      try {
        const decision = await new Limiter({ algorithm, store }).check('k');
        return { decision, error: errors.join('\n'), changes };
      } finally {
        await store.shutdown();
      }
    };
    try {
      expect((await round()).decision).toMatchObject({ allowed: true, remaining: 99 });
      const slot = hashSlot(`${prefix}{k}`);
      const range = (await client.cluster('SLOTS')).find(([from, to]) => from <= slot && slot <= to);
      const port = range?.[2]?.[1] as number;
      await nodes.find((node) => node.port === port)!.kill();

      const seen = { moved: 0, closed: 0 };
      for (let rounds = 0; (seen.moved === 0 || seen.closed === 0) && rounds < 60; rounds++) {
        const { decision, error, changes } = await round();
        expect(decision).toMatchObject({ allowed: false, reason: 'store-unavailable' });
        if (MOVED_LOOP.test(error)) seen.moved++;
        else if (CLOSED_LOOP.test(error)) seen.closed++;
        // The call failed for want of the node: its breaker heard a failure, and opened.
        expect({ error, changes }).toEqual({ error, changes: [['open', `127.0.0.1:${port}`]] });
      }
      // Both endings were judged (rounds run until they were; each is about one in two).
      expect(seen.moved).toBeGreaterThan(0);
      expect(seen.closed).toBeGreaterThan(0);
    } finally {
      client.disconnect();
    }
  }, 60_000);
});

/**
 * Every generated Lua script, as Lua: a change to a script generator shows up in review as a diff
 * of `__scripts__/*.lua` (update with `pnpm vitest run --project ioredis test/redis/scripts.test.ts -u`).
 * The scripts' behaviour is tested against Redis elsewhere (differential.test.ts); this pins their text.
 */
import { type Algorithm, fixedWindow, gcra, leakyBucketQueue, tokenBucket } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { LUA_ALGORITHMS } from '../../packages/redis/src/lua/algorithms.js';
import { BATCH_SCRIPT, batchScript } from '../../packages/redis/src/scripts/batch-script.js';
import { CHARGE_SCRIPT } from '../../packages/redis/src/scripts/charge-script.js';
import { type LeanLimit, leanBatchScript } from '../../packages/redis/src/scripts/lean-batch-script.js';
import { LEASE_SCRIPT } from '../../packages/redis/src/scripts/lease-script.js';
import { REFUND_SCRIPT } from '../../packages/redis/src/scripts/refund-script.js';
import { RESET_SCRIPT } from '../../packages/redis/src/scripts/reset-script.js';
import { leanSingleScript, singleScript } from '../../packages/redis/src/scripts/single-script.js';
import { SPLIT_REFUND_SCRIPT } from '../../packages/redis/src/scripts/split-refund-script.js';
import { SYNC_SCRIPT } from '../../packages/redis/src/scripts/sync-script.js';
import { algorithmArgs, luaAlgorithm } from '../../packages/redis/src/wire.js';

const file = (name: string) => `./__scripts__/${name}.lua`;

/** An algorithm's lean twin with its params, as the store bakes it. */
function leanLimit(algorithm: Algorithm): LeanLimit {
  const { entry } = luaAlgorithm(algorithm);
  return { lean: entry.lean!, params: algorithmArgs(algorithm).slice(2), field: algorithm.fingerprint };
}

/** A representative layered set: per second, per minute, per hour on one user key. */
const LAYERED = [
  tokenBucket({ capacity: 10, refillInterval: '1s' }),
  fixedWindow({ limit: 300, window: '1m' }),
  gcra({ rate: 5000, period: '1h', burst: 100 }),
];

describe('generated Lua scripts', () => {
  describe('single limit', () => {
    for (const entry of LUA_ALGORITHMS) {
      it(entry.table, async () => {
        // A kind with a lean twin runs it (params from ARGV past the cap of baked scripts).
        const lua = entry.lean === undefined ? singleScript(entry) : leanSingleScript(entry.lean);
        await expect(lua).toMatchFileSnapshot(file(`single-${entry.table}`));
      });
    }

    it('token bucket with its params written in (baked)', async () => {
      const { lean, params } = leanLimit(tokenBucket({ capacity: 20, refillInterval: '10s' }));
      await expect(leanSingleScript(lean, params)).toMatchFileSnapshot(file('single-token_bucket-baked'));
    });

    it('leaky bucket queue with its params written in (baked)', async () => {
      const limit = leanLimit(leakyBucketQueue({ rate: 2, period: '1s', burst: 2, queue: 3 }));
      await expect(leanSingleScript(limit.lean, limit.params)).toMatchFileSnapshot(
        file('single-leaky_bucket_queue-baked'),
      );
    });
  });

  describe('layered limits', () => {
    it('batch, every kind', async () => {
      await expect(BATCH_SCRIPT).toMatchFileSnapshot(file('batch'));
    });

    it('batch, the kinds of a layered set', async () => {
      const kinds = [...new Set(LAYERED.map((algorithm) => luaAlgorithm(algorithm).entry))];
      await expect(batchScript(kinds)).toMatchFileSnapshot(file('batch-layered'));
    });

    it('lean batch of a layered set on one user key', async () => {
      await expect(leanBatchScript(LAYERED.map(leanLimit), [1, 1, 1])).toMatchFileSnapshot(
        file('lean-batch-layered'),
      );
    });

    it('lean batch of a layered set on two user keys (per user, per team)', async () => {
      await expect(leanBatchScript(LAYERED.map(leanLimit), [1, 2, 1])).toMatchFileSnapshot(
        file('lean-batch-two-keys'),
      );
    });
  });

  describe('compensation and leases', () => {
    it('refund', async () => {
      await expect(REFUND_SCRIPT).toMatchFileSnapshot(file('refund'));
    });

    it('charge', async () => {
      await expect(CHARGE_SCRIPT).toMatchFileSnapshot(file('charge'));
    });

    it('split refund', async () => {
      await expect(SPLIT_REFUND_SCRIPT).toMatchFileSnapshot(file('split-refund'));
    });

    it("sync (SyncedStore's cycle)", async () => {
      await expect(SYNC_SCRIPT).toMatchFileSnapshot(file('sync'));
    });

    it('reset', async () => {
      await expect(RESET_SCRIPT).toMatchFileSnapshot(file('reset'));
    });

    it('lease', async () => {
      await expect(LEASE_SCRIPT).toMatchFileSnapshot(file('lease'));
    });
  });
});

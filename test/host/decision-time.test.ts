import { fixedWindow, tokenBucket } from '@sluice/core';
import { HostStore } from '@sluice/host';
import { afterAll, describe, expect, it } from 'vitest';
import { tempPath } from './helpers.js';

/**
 * Two stores on one environment stand for two worker processes: each has its own queue of
 * decisions, and LMDB runs their write transactions one at a time. A decision made without `now`
 * takes the store's clock when its transaction runs, inside the write lock, so decisions on a key
 * are in time order whichever process makes them. Taken at call time, a call queued at 100 ms
 * whose transaction ran after another process's decision at 101 ms was decided 1 ms in that
 * decision's past: a token bucket reported one token too few (the examples' smoke test saw
 * `remaining 0,1,2,2,4` from three workers), a window could be counted after it had ended.
 */
describe('HostStore: a decision takes its time inside the transaction, in order across processes', () => {
  const path = tempPath('decision-time');
  let t = 0;
  const clock = () => t;
  const a = new HostStore({ path, clock, logger: false, sweepInterval: 0 });
  const b = new HostStore({ path, clock, logger: false, sweepInterval: 0 });
  afterAll(() => Promise.all([a.shutdown(), b.shutdown()]));

  it("a call queued before another process's later decision is decided after it, at its time", async () => {
    const bucket = tokenBucket({ capacity: 5, refillAmount: 1, refillInterval: '1s' });
    const call = (key: string) => [{ algorithm: bucket, key, cost: 1, policy: 'p' }];
    t = 1_000_000;
    // b's queue is waiting for its turn (a decision on another key), then a's call at 1,000,000 ms
    // and b's at 1,000,001 ms on one key: b's turn runs first.
    const earlier = b.consume(call('other'), undefined);
    const fromA = a.consume(call('k'), undefined);
    t += 1;
    const fromB = b.consume(call('k'), undefined);
    await earlier;
    const [[first], [second]] = await Promise.all([fromB, fromA]);
    expect([first!.remaining, second!.remaining]).toEqual([4, 3]);
  });

  it('a fixed window counts each decision in the window of its transaction', async () => {
    const window = fixedWindow({ limit: 10, window: '1s' });
    const call = [{ algorithm: window, key: 'w', cost: 1, policy: 'p' }];
    t = 2_000_999;
    const earlier = b.consume([{ ...call[0]!, key: 'other' }], undefined);
    const fromA = a.consume(call, undefined);
    t = 2_001_000; // the next window
    const fromB = b.consume(call, undefined);
    await earlier;
    const [[first], [second]] = await Promise.all([fromB, fromA]);
    // Both in the window that began at 2,001,000: 9 then 8 left, each with the whole second to go.
    expect([first!.remaining, second!.remaining]).toEqual([9, 8]);
    expect([first!.resetAfter, second!.resetAfter]).toEqual([1000, 1000]);
  });

  it('an explicit `now` is kept as given', async () => {
    const window = fixedWindow({ limit: 10, window: '1s' });
    t = 3_000_500;
    const [decision] = await a.consume(
      [{ algorithm: window, key: 'given', cost: 1, policy: 'p' }],
      2_999_999,
    );
    expect(decision!.resetAfter).toBe(1);
  });
});

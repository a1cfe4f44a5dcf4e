import { fixedWindow, Limiter } from '@sluice/core';
import { HostStore } from '@sluice/host';
import { afterAll, describe, expect, it } from 'vitest';
import { tempPath } from './helpers.js';

/**
 * A replay (calls that pass their own `now`) runs slower than the trace it replays: a state whose
 * ttl is 1 ms of trace time must not expire 1 ms of the store's clock later while the trace's time
 * stands still. States expire by the store's clock, so a write at a caller's `now` lives
 * `replayGrace` longer, as RedisStore's does; calls on the store's own clock get no grace.
 */
describe("HostStore: a write at a caller's now outlives its state by replayGrace", () => {
  let t = 5_000_000;
  const clock = () => t;
  const store = new HostStore({ path: tempPath('replay'), clock, logger: false, sweepInterval: 0 });
  const tight = new HostStore({
    path: tempPath('replay-none'),
    clock,
    logger: false,
    sweepInterval: 0,
    replayGrace: 0,
  });
  afterAll(() => Promise.all([store.shutdown(), tight.shutdown()]));
  const limiter = (on: HostStore) =>
    new Limiter({ algorithm: fixedWindow({ limit: 2, window: 100 }), store: on });

  it('a window written 1 ms before its end still counts after the store clock moves on', async () => {
    const replay = limiter(store);
    // Trace time 1,000,099: the last ms of the window [1,000,000, 1,000,100).
    const at = { now: 1_000_099 };
    expect((await replay.check('k', at)).allowed).toBe(true);
    expect((await replay.check('k', at)).allowed).toBe(true);
    t += 50; // the replay is slow: 50 ms of the store's clock pass, none of the trace's
    const third = await replay.check('k', at);
    expect(third.allowed).toBe(false);
    expect(third.remaining).toBe(0);
  });

  it('replayGrace: 0 expires it by the state ttl alone (the answer a replay slower than real time risks)', async () => {
    const replay = limiter(tight);
    const at = { now: 1_000_099 };
    await replay.check('k', at);
    await replay.check('k', at);
    t += 50;
    expect((await replay.check('k', at)).allowed).toBe(true);
  });

  it('calls on the store clock get no grace: their state expires with its ttl', async () => {
    const own = new HostStore({ path: tempPath('replay-live'), clock, logger: false, sweepInterval: 0 });
    try {
      // The window [7,000,900, 7,001,000): the state is as good as new at its end, a whole second
      // (the expiry index counts seconds), and a replay's grace would keep it 10 minutes more.
      t = 7_000_950;
      await limiter(own).check('live');
      expect(own.keyCount).toBe(1);
      t = 7_000_999;
      expect(own.sweep()).toBe(0);
      t = 7_001_000;
      expect(own.sweep()).toBe(1);
      expect(own.keyCount).toBe(0);
    } finally {
      await own.shutdown();
    }
  });

  it('replayGrace is validated at creation', () => {
    expect(() => new HostStore({ path: tempPath('bad'), replayGrace: -1 })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', option: 'replayGrace' }),
    );
  });
});

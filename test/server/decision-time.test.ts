import { describe, expect, it } from 'vitest';
import { startServer } from './harness.js';

/**
 * The server's clock is read inside the write transaction a command's job runs in (as HostStore's:
 * decisions on a key in time order across --workers), and a state written at a command's AT (a
 * replay) outlives its ttl by the replay grace, so a replay slower than the server's clock keeps
 * its state; a command without AT gets no grace.
 */
describe('sluice-server: the decision time, and AT writes', () => {
  it('a command is decided at the clock read when its transaction runs, not when it arrived', async () => {
    // A clock that moves a second at every read: read once per transaction, both commands of one
    // pipeline (one turn, one transaction) are decided at one time; read as each arrived, the
    // second would be decided a second later, with a token back.
    let t = 1_000_000_000;
    const test = await startServer({ clock: () => (t += 1000), sweepInterval: 3_600_000 });
    try {
      const client = await test.client();
      const results = await client
        .pipeline()
        .call('RL.PREDUCE', 'k', '2', '1000', 'REFILL', '1')
        .call('RL.PREDUCE', 'k', '2', '1000', 'REFILL', '1')
        .exec();
      expect(results!.map(([error, tokens]) => error ?? tokens)).toEqual([2, 1]);
    } finally {
      await test.stop();
    }
  });

  it('a state written at AT outlives its ttl by the replay grace; one written at the clock does not', async () => {
    let t = 2_000_000_000;
    const test = await startServer({ clock: () => t, sweepInterval: 3_600_000 });
    try {
      const client = await test.client();
      const at = String(t);
      // A bucket of 1 refilled every second: a take leaves a state that matters for 1 s.
      expect(await client.call('RL.PREDUCE', 'replayed', '1', '1000', 'AT', '2000000')).toBe(1);
      expect(await client.call('RL.PREDUCE', 'live', '1', '1000')).toBe(1);
      expect(at).toBe(String(t));
      t += 60_000; // a minute of the server's clock: the live state has expired, the replayed has not
      test.server.sweepStep(t);
      expect(await client.call('RL.PGET', 'live', '1', '1000')).toBe(1);
      // Still at the replay's time: the state written there is found (0 left), not a fresh bucket.
      expect(await client.call('RL.PGET', 'replayed', '1', '1000', 'AT', '2000000')).toBe(0);
      expect(Number(/keys_stored:(\d+)/.exec((await client.info()) as string)?.[1])).toBe(1);
    } finally {
      await test.stop();
    }
  });
});

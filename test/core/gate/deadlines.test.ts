import { describe, expect, it } from 'vitest';
import { Deadlines } from '../../../packages/core/src/gate/deadlines.js';

/** A fake clock and timer queue: `advance` runs what is due, in order. */
function fakeTime() {
  let now = 0;
  let timers: { at: number; run: () => void }[] = [];
  return {
    clock: () => now,
    schedule: (run: () => void, delay: number) => {
      timers.push({ at: now + delay, run });
      return {};
    },
    /** `setImmediate`: runs after what is due now (a turn of I/O), before anything later. */
    defer: (run: () => void) => {
      timers.push({ at: now, run });
    },
    armed: () => timers.length,
    advance(ms: number) {
      const end = now + ms;
      for (;;) {
        const due = timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
        if (due === undefined) break;
        timers = timers.filter((t) => t !== due);
        now = due.at;
        due.run();
      }
      now = end;
    },
  };
}

describe('Deadlines: one timer for every call in flight', () => {
  it('expires each call at its own deadline, never early, and re-arms for the next', () => {
    const time = fakeTime();
    const deadlines = new Deadlines(100, time.clock, time.schedule, time.defer);
    const expired: [string, number][] = [];
    const add = (name: string) => deadlines.add(() => expired.push([name, time.clock()]));
    add('a');
    time.advance(30);
    add('b');
    time.advance(50);
    add('c');
    expect(time.armed()).toBe(1);
    time.advance(19);
    expect(expired).toEqual([]);
    time.advance(1);
    expect(expired).toEqual([['a', 100]]);
    time.advance(200);
    expect(expired).toEqual([
      ['a', 100],
      ['b', 130],
      ['c', 180],
    ]);
    expect(time.armed()).toBe(0);
  });

  it('a settled call never expires, and with nothing in flight the timer is not re-armed', () => {
    const time = fakeTime();
    const deadlines = new Deadlines(100, time.clock, time.schedule, time.defer);
    const expired: string[] = [];
    const a = deadlines.add(() => expired.push('a'));
    const b = deadlines.add(() => expired.push('b'));
    expect(deadlines.clear(a)).toBe(true);
    expect(deadlines.clear(a)).toBe(false);
    time.advance(50);
    expect(deadlines.clear(b)).toBe(true);
    time.advance(500);
    expect(expired).toEqual([]);
    expect(time.armed()).toBe(0);
    // A new call after idle arms the timer again.
    const c = deadlines.add(() => expired.push('c'));
    time.advance(100);
    expect(expired).toEqual(['c']);
    expect(deadlines.clear(c)).toBe(false);
  });

  it('calls started by an expiry, and calls still pending behind it, keep their own deadlines', () => {
    const time = fakeTime();
    const deadlines = new Deadlines(100, time.clock, time.schedule, time.defer);
    const expired: [string, number][] = [];
    deadlines.add(() => {
      expired.push(['a', time.clock()]);
      deadlines.add(() => expired.push(['from a', time.clock()]));
    });
    time.advance(5);
    deadlines.add(() => expired.push(['b', time.clock()]));
    time.advance(400);
    expect(expired).toEqual([
      ['a', 100],
      ['b', 105],
      ['from a', 200],
    ]);
  });

  it('an expiry that throws does not stop the others', () => {
    const time = fakeTime();
    const deadlines = new Deadlines(10, time.clock, time.schedule, time.defer);
    const expired: string[] = [];
    deadlines.add(() => {
      throw new Error('boom');
    });
    deadlines.add(() => expired.push('b'));
    time.advance(10);
    expect(expired).toEqual(['b']);
  });

  it('race: the outcome when it comes first, a coded timeout otherwise', async () => {
    const time = fakeTime();
    const deadlines = new Deadlines(100, time.clock, time.schedule, time.defer);
    await expect(deadlines.race(Promise.resolve(7), 'reset')).resolves.toBe(7);
    const late = deadlines.race(new Promise<number>(() => {}), 'reset');
    time.advance(100);
    await expect(late).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE_FAILURE' });
  });

  it('an expiry waits one turn of I/O: a reply read after a stall of this process settles its call, not a timeout', () => {
    const time = fakeTime();
    let deferred: (() => void) | undefined;
    const deadlines = new Deadlines(100, time.clock, time.schedule, (run) => {
      deferred = run;
    });
    let expired = false;
    const deadline = deadlines.add(() => {
      expired = true;
    });
    // The process stalled past the deadline: the timer fires first, the reply is read after it.
    time.advance(250);
    expect(deferred).toBeDefined();
    expect(expired).toBe(false);
    expect(deadlines.clear(deadline)).toBe(true);
    deferred!();
    expect(expired).toBe(false);
  });
});

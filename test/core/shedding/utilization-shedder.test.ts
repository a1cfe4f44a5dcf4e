import {
  ErrorCode,
  eventLoopDelaySignal,
  eventLoopUtilizationSignal,
  UtilizationShedder,
} from '@sluice/core';
import { afterEach, describe, expect, it, vi } from 'vitest';

/** A shedder driven by hand: injected signal, clock and random source; no timer. */
function harness(options: { random?: () => number; recovery?: number } = {}) {
  let signal = 0;
  let now = 0;
  const draws: number[] = [];
  const shedder = new UtilizationShedder({
    timer: false,
    signal: () => signal,
    clock: () => now,
    random:
      options.random ??
      (() => {
        const next = draws.shift();
        if (next === undefined) throw new Error('the test ran out of random draws');
        return next;
      }),
    ...(options.recovery === undefined ? {} : { recovery: options.recovery }),
  });
  const advance = (seconds: number, value: number) => {
    signal = value;
    for (let i = 0; i < seconds; i++) {
      now += 1000;
      shedder.sample();
    }
  };
  return { shedder, advance, draws };
}

describe('UtilizationShedder', () => {
  it('follows the control law over an injected clock and signal, exposing the fraction per priority', () => {
    const { shedder, advance } = harness();
    advance(60, 0.5);
    expect(shedder.fractions()).toEqual({ critical: 0, normal: 0, low: 0 });
    advance(28, 1);
    expect(shedder.fractions()).toEqual({ critical: 0, normal: 0, low: 0 });
    advance(30, 1);
    expect(shedder.fraction('low')).toBe(0.5);
    advance(60, 1);
    expect(shedder.fractions()).toEqual({ critical: 0, normal: 0.5, low: 1 });
    advance(200, 0.75);
    expect(shedder.fractions()).toEqual({ critical: 0, normal: 0.5, low: 1 });
    advance(60, 0.1);
    expect(shedder.fractions()).toEqual({ critical: 0, normal: 0, low: 0.5 });
    expect(shedder.lastSignal).toBe(0.1);
    expect(shedder.state.pressure).toBe(30_000);
  });

  it('the drop decision is deterministic given the random source: shed when the draw is below the fraction', () => {
    const { shedder, advance, draws } = harness();
    advance(28 + 30, 1); // low sheds half
    draws.push(0.49, 0.5, 0.9, 0.0);
    expect(shedder.check('low')).toMatchObject({
      allowed: false,
      reason: 'shed',
      policy: 'utilization',
      retryAfter: 4920,
    });
    expect(shedder.check('low')).toMatchObject({ allowed: true, reason: undefined, retryAfter: 0 });
    expect(shedder.check('low').allowed).toBe(true);
    expect(shedder.check('low')).toMatchObject({ allowed: false, retryAfter: 1000 });
    // Priorities that are not being shed take no draw at all.
    expect(shedder.check('normal').allowed).toBe(true);
    expect(shedder.check('critical').allowed).toBe(true);
    expect(draws).toEqual([]);
  });

  it('critical traffic is never shed, even at full shedding', () => {
    const { shedder, advance } = harness({ random: () => 0 });
    advance(28 + 120 + 60, 1);
    expect(shedder.check('low').allowed).toBe(false);
    expect(shedder.check('normal').allowed).toBe(false);
    for (let i = 0; i < 100; i++) expect(shedder.check('critical').allowed).toBe(true);
  });

  it('sheds the expected share of a priority over many requests', () => {
    let seed = 42;
    // A small LCG: reproducible draws.
    const lcg = () => {
      seed = (Math.imul(seed, 1_664_525) + 1_013_904_223) >>> 0;
      return seed / 2 ** 32;
    };
    const { shedder, advance } = harness({ random: lcg });
    advance(28 + 15, 1); // low at 0.25
    let shed = 0;
    for (let i = 0; i < 10_000; i++) if (!shedder.check('low').allowed) shed++;
    expect(shed / 10_000).toBeGreaterThan(0.23);
    expect(shed / 10_000).toBeLessThan(0.27);
  });

  it('a signal that throws is reported and holds the controller', () => {
    const errors: unknown[] = [];
    let fail = false;
    let now = 0;
    const shedder = new UtilizationShedder({
      timer: false,
      clock: () => now,
      signal: () => {
        if (fail) throw new Error('no metrics');
        return 1;
      },
      onError: (e) => errors.push(e),
    });
    for (let i = 0; i < 40; i++) {
      now += 1000;
      shedder.sample();
    }
    const before = shedder.state.pressure;
    fail = true;
    now += 1000;
    shedder.sample();
    expect(errors).toHaveLength(1);
    expect(shedder.state.pressure).toBe(before);
    expect(shedder.lastSignal).toBeNaN();
  });

  it('samples on its own timer every interval, and close() stops it', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    try {
      const shedder = new UtilizationShedder({ signal: () => 1, clock: () => Date.now(), interval: '1s' });
      vi.advanceTimersByTime(28_000 + 60_000);
      expect(shedder.fraction('low')).toBe(1);
      shedder.close();
      shedder.close();
      vi.advanceTimersByTime(60_000);
      expect(shedder.fraction('normal')).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('its timer does not keep the process alive', () => {
    const shedder = new UtilizationShedder({ signal: () => 0 });
    try {
      const timer = (shedder as unknown as { timer: NodeJS.Timeout }).timer;
      expect(timer.hasRef()).toBe(false);
    } finally {
      shedder.close();
    }
    expect((shedder as unknown as { timer: NodeJS.Timeout | undefined }).timer).toBeUndefined();
  });

  it('validates options at creation with coded errors', () => {
    const bad = (options: object, option: string, code: string = ErrorCode.INVALID_OPTION) =>
      expect(() => new UtilizationShedder({ timer: false, ...options } as never)).toThrow(
        expect.objectContaining({ code, option }),
      );
    bad({ good: 0.9, bad: 0.8 }, 'good');
    bad({ good: 0 }, 'good');
    bad({ bad: 1.2 }, 'bad');
    bad({ bad: Number.NaN }, 'bad');
    bad({ delay: -1 }, 'delay');
    bad({ ramp: 0 }, 'ramp');
    bad({ ramp: '2 fortnights' }, 'ramp', ErrorCode.INVALID_DURATION);
    bad({ recovery: -5 }, 'recovery');
    bad({ interval: 0 }, 'interval');
    bad({ priorities: ['critical'] }, 'priorities');
    bad({ priorities: ['a', ''] }, 'priorities[1]');
    bad({ signal: 0.5 }, 'signal');
    bad({ timer: 'no' }, 'timer');
    bad({ retryAfter: { min: 0 } }, 'retryAfter.min');
    bad({ rampp: 1 }, 'rampp', ErrorCode.UNKNOWN_OPTION);
    const shedder = new UtilizationShedder({ timer: false, delay: 0, signal: () => 0 });
    expect(shedder.params.delay).toBe(0);
    expect(() => shedder.check('urgent')).toThrow(
      expect.objectContaining({ code: ErrorCode.INVALID_OPTION, option: 'priority' }),
    );
  });
});

describe('utilization signals', () => {
  const closers: (() => void)[] = [];
  afterEach(() => {
    for (const close of closers.splice(0)) close();
  });

  it('event loop utilization since the previous call is a number in [0, 1]', () => {
    const signal = eventLoopUtilizationSignal();
    const start = Date.now();
    while (Date.now() - start < 5) {
      // Busy: the loop is utilized.
    }
    const u = signal();
    expect(u).toBeGreaterThanOrEqual(0);
    expect(u).toBeLessThanOrEqual(1);
  });

  it('event loop delay maps the chosen percentile onto [0, 1] and validates its options', () => {
    const signal = eventLoopDelaySignal({ saturated: '50ms', percentile: 90 });
    closers.push(() => signal.close());
    const u = signal();
    expect(u).toBeGreaterThanOrEqual(0);
    expect(u).toBeLessThanOrEqual(1);
    expect(() => eventLoopDelaySignal({ percentile: 0 })).toThrow(
      expect.objectContaining({ code: ErrorCode.INVALID_OPTION, option: 'percentile' }),
    );
    expect(() => eventLoopDelaySignal({ resolution: 0 })).toThrow(
      expect.objectContaining({ option: 'resolution' }),
    );
  });
});

import { AdaptiveConcurrency, aimd, ErrorCode } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { recording } from './adaptive-helpers.js';

describe('AdaptiveConcurrency leases: ttl', () => {
  it('a lease never released gives its slot back once its ttl has passed, counted as a drop ending at its expiry', () => {
    const controller = recording(2);
    const limiter = new AdaptiveConcurrency({ controller, ttl: 1000 });
    const lost = limiter.acquire(undefined, { now: 0 });
    const kept = limiter.acquire(undefined, { now: 500 });
    expect(lost.decision.allowed).toBe(true);
    expect(kept.decision.allowed).toBe(true);
    // Full until the first lease's ttl runs out at 1000.
    expect(limiter.acquire(undefined, { now: 999 }).decision.allowed).toBe(false);
    expect(limiter.inFlight).toBe(2);
    const next = limiter.acquire(undefined, { now: 1000 });
    expect(next.decision.allowed).toBe(true);
    expect(limiter.inFlight).toBe(2);
    expect(controller.samples).toEqual([{ start: 0, end: 1000, inFlight: 1, dropped: true }]);
    // Its late release frees nothing and tells the controller nothing.
    expect(lost.release(1200)).toBe(false);
    expect(limiter.inFlight).toBe(2);
    expect(controller.samples).toHaveLength(1);
    // A lease released in time is not expired later.
    expect(kept.release(1400)).toBe(true);
    expect(limiter.acquire(undefined, { now: 5000 }).decision.allowed).toBe(true);
    expect(controller.samples.map((s) => s.dropped)).toEqual([true, false, true]);
  });

  it("an expired lease frees its partition's slot too", () => {
    const limiter = new AdaptiveConcurrency({
      controller: recording(4),
      partitions: { critical: 0.5, low: 0.5 },
      ttl: '1s',
    });
    limiter.acquire('low', { now: 0 });
    limiter.acquire('low', { now: 0 });
    expect(limiter.partitions().low!.inFlight).toBe(2);
    limiter.acquire('critical', { now: 1000 });
    expect(limiter.partitions().low!.inFlight).toBe(0);
    expect(limiter.partitions().critical!.inFlight).toBe(1);
  });

  it('defaults to 60 s, as ConcurrencyLimiter', () => {
    const limiter = new AdaptiveConcurrency({ controller: aimd({ initialLimit: 1, minLimit: 1 }) });
    expect(limiter.ttl).toBe(60_000);
    limiter.acquire(undefined, { now: 0 });
    expect(limiter.acquire(undefined, { now: 59_999 }).decision.allowed).toBe(false);
    expect(limiter.acquire(undefined, { now: 60_000 }).decision.allowed).toBe(true);
  });

  it('refuses a bad ttl with a coded error naming the option', () => {
    expect(() => new AdaptiveConcurrency({ ttl: -1 })).toThrow(
      expect.objectContaining({ code: ErrorCode.INVALID_OPTION }),
    );
    expect(() => new AdaptiveConcurrency({ ttl: 'soon' as '1s' })).toThrow(/ttl/);
  });
});

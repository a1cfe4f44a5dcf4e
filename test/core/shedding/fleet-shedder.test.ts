import { ErrorCode, FleetShedder, type Lease, MemoryStore } from '@sluice/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

function sync(lease: Lease | Promise<Lease>): Lease {
  if (lease instanceof Promise) throw new Error('expected a synchronous lease from the memory store');
  return lease;
}

/** A deterministic stand-in for Math.random: cycles through the given draws. */
function draws(...values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length]!;
}

describe('FleetShedder', () => {
  it('computes each priority’s ceiling from the reserves above it', () => {
    expect(new FleetShedder({ budget: 10 }).ceilings).toEqual([10, 8, 6]);
    const custom = new FleetShedder({
      budget: 100,
      priorities: ['payments', 'api', 'reports', 'analytics'],
      reserve: { payments: 0.25, api: 0.15, reports: 0.1 },
    });
    expect(custom.ceilings).toEqual([100, 75, 60, 50]);
  });

  it('critical traffic is still admitted while non-critical traffic saturates its share of the budget', () => {
    const shedder = new FleetShedder({ budget: 10, random: draws(0.5) });
    const held: Lease[] = [];
    // A flood of low traffic: 6 admitted (60 % of 10), the rest shed.
    let lowAdmitted = 0;
    for (let i = 0; i < 20; i++) {
      const lease = sync(shedder.acquire('low', { now: i }));
      if (lease.decision.allowed) {
        lowAdmitted++;
        held.push(lease);
      } else {
        expect(lease.decision).toMatchObject({ reason: 'shed', limit: 6, remaining: 0, policy: 'fleet' });
      }
    }
    expect(lowAdmitted).toBe(6);
    // Normal traffic takes the next 2 (up to 80 %), then is shed.
    for (let i = 0; i < 2; i++) held.push(sync(shedder.acquire('normal', { now: 30 })));
    expect(held.every((l) => l.decision.allowed)).toBe(true);
    expect(sync(shedder.acquire('normal', { now: 31 })).decision).toMatchObject({
      allowed: false,
      reason: 'shed',
      limit: 8,
    });
    expect(sync(shedder.acquire('low', { now: 31 })).decision.allowed).toBe(false);
    // Critical traffic still finds its reserved 20 %.
    const critical = [
      sync(shedder.acquire('critical', { now: 40 })),
      sync(shedder.acquire('critical', { now: 41 })),
    ];
    expect(critical.map((l) => l.decision)).toMatchObject([
      { allowed: true, limit: 10, remaining: 1 },
      { allowed: true, limit: 10, remaining: 0 },
    ]);
    // The budget is a real budget: past it, critical is refused too.
    expect(sync(shedder.acquire('critical', { now: 42 })).decision).toMatchObject({
      allowed: false,
      reason: 'shed',
    });
    // A finished low request frees a slot, but low stays shed until the count drops under its own ceiling.
    held[0]!.release(50);
    expect(sync(shedder.acquire('low', { now: 51 })).decision.allowed).toBe(false);
    expect(sync(shedder.acquire('critical', { now: 51 })).decision.allowed).toBe(true);
  });

  it('critical requests arriving while non-critical traffic keeps coming are always admitted up to the reserve', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('normal', 'low', 'release'), { minLength: 1, maxLength: 300 }),
        (traffic) => {
          const shedder = new FleetShedder({ budget: 20, random: draws(0.3) });
          const nonCritical: Lease[] = [];
          for (const [i, kind] of traffic.entries()) {
            if (kind === 'release') nonCritical.shift()?.release(i);
            else {
              const lease = sync(shedder.acquire(kind, { now: i }));
              if (lease.decision.allowed) nonCritical.push(lease);
            }
            expect(nonCritical.length).toBeLessThanOrEqual(16);
          }
          // However the non-critical traffic went, 20 % of the budget is there for critical.
          for (let j = 0; j < 4; j++)
            expect(sync(shedder.acquire('critical', { now: 1000 })).decision.allowed).toBe(true);
        },
      ),
    );
  });

  it('a shed request gets a jittered retryAfter in [1 s, 5 s], deterministic given the random source', () => {
    const shedder = new FleetShedder({
      budget: 1,
      priorities: ['critical', 'low'],
      reserve: { critical: 0 },
      random: draws(0, 0.5, 0.999),
    });
    const held = sync(shedder.acquire('low', { now: 0 }));
    expect(held.decision.allowed).toBe(true);
    const retries = [1, 2, 3].map((t) => sync(shedder.acquire('low', { now: t })).decision.retryAfter);
    expect(retries).toEqual([1000, 3000, 4996]);
  });

  it('a shared store makes one budget for every shedder on it (the fleet)', () => {
    const store = new MemoryStore();
    const processA = new FleetShedder({ budget: 4, store });
    const processB = new FleetShedder({ budget: 4, store });
    sync(processA.acquire('critical', { now: 0 }));
    sync(processA.acquire('low', { now: 0 }));
    expect(sync(processB.acquire('low', { now: 0 })).decision).toMatchObject({
      allowed: false,
      reason: 'shed',
    });
    expect(processB.peek('critical', { now: 0 })).toMatchObject({ allowed: true, limit: 4, remaining: 2 });
  });

  it('lost leases expire after the ttl and a release after that is harmless', () => {
    const shedder = new FleetShedder({ budget: 1, priorities: ['only'], reserve: {}, ttl: '10s' });
    const lost = sync(shedder.acquire('only', { now: 0 }));
    expect(sync(shedder.acquire('only', { now: 9999 })).decision.allowed).toBe(false);
    const next = sync(shedder.acquire('only', { now: 10_000 }));
    expect(next.decision.allowed).toBe(true);
    expect(lost.release(10_001)).toBe(false);
    expect(sync(shedder.acquire('only', { now: 10_002 })).decision.allowed).toBe(false);
    expect(next.release(10_003)).toBe(true);
    expect(next.release(10_004)).toBe(false);
  });

  it('an unknown priority is a classifier bug: it throws, naming the accepted ones', () => {
    const shedder = new FleetShedder({ budget: 10 });
    expect(() => shedder.acquire('urgent')).toThrow(
      expect.objectContaining({
        code: ErrorCode.INVALID_OPTION,
        option: 'priority',
        message: expect.stringContaining("'critical'"),
      }),
    );
  });

  it('validates the budget and the reserves at creation', () => {
    const bad = (options: object, option: string, code: string = ErrorCode.INVALID_OPTION) =>
      expect(() => new FleetShedder(options as never)).toThrow(expect.objectContaining({ code, option }));
    bad({}, 'budget', ErrorCode.MISSING_OPTION);
    bad({ budget: 0 }, 'budget');
    bad({ budget: 10, reserve: { critical: 1.5 } }, 'reserve.critical');
    bad({ budget: 10, reserve: { critical: -0.1 } }, 'reserve.critical');
    bad({ budget: 10, reserve: { critical: Number.NaN } }, 'reserve.critical');
    bad({ budget: 10, reserve: { urgent: 0.1 } }, 'reserve.urgent');
    bad({ budget: 10, reserve: { low: 0.1 } }, 'reserve.low');
    // Reserves that sum to the whole budget leave the least important priority nothing.
    bad({ budget: 10, reserve: { critical: 0.5, normal: 0.5 } }, 'reserve');
    bad({ budget: 3, reserve: { critical: 0.5, normal: 0.3 } }, 'reserve');
    bad({ budget: 10, priorities: ['a', 'b'] }, 'reserve', ErrorCode.MISSING_OPTION);
    bad({ budget: 10, priorities: [] }, 'priorities');
    bad({ budget: 10, priorities: ['a', 'a'], reserve: {} }, 'priorities[1]');
    bad({ budget: 10, retryAfter: { min: '5s', max: '1s' } }, 'retryAfter.max');
    bad({ budget: 10, random: 0.5 }, 'random');
    bad({ budget: 10, reserv: {} }, 'reserv', ErrorCode.UNKNOWN_OPTION);
  });
});

/**
 * A check of one limit answers with that limit's own decision, whose `limits` list is made when
 * read (issue 36: one object per check instead of three). What a user can do with a decision must
 * not change with it: read every field and `limits`, serialise it as JSON; and what changes is
 * pinned here as documented: a spread and `structuredClone` copy the fields without `limits`.
 */
import { type Decision, fixedWindow, Limiter, MemoryStore, tokenBucket } from '@sluice/core';
import { combine, decide, withFields } from '@sluice/core/adapter';
import { describe, expect, it } from 'vitest';

const NOW = 1_800_000_000_000;
const FIELDS = ['allowed', 'limit', 'remaining', 'resetAfter', 'retryAfter', 'delay', 'policy', 'reason'];

function single(): Decision {
  const limiter = new Limiter({ algorithm: tokenBucket({ capacity: 5, refillInterval: 1000 }) });
  return limiter.checkSync('k', { now: NOW }) as Decision;
}

describe('the decision of a check', () => {
  it('of one limit lists that limit’s own decision in limits, itself with no limits, the same list on every read', () => {
    const decision = single();
    expect(decision).toMatchObject({
      allowed: true,
      limit: 5,
      remaining: 4,
      resetAfter: 200,
      policy: 'token-bucket',
    });
    expect(decision.limits).toHaveLength(1);
    const [own] = decision.limits;
    for (const name of FIELDS) expect(own![name as keyof Decision]).toEqual(decision[name as keyof Decision]);
    expect(own!.limits).toEqual([]);
    expect(decision.limits).toBe(decision.limits);
  });

  it('serialises as JSON with limits, as the plain object it was before', () => {
    const decision = single();
    const plain = {
      allowed: true,
      limit: 5,
      remaining: 4,
      resetAfter: 200,
      retryAfter: 0,
      delay: 0,
      policy: 'token-bucket',
      limits: [
        {
          allowed: true,
          limit: 5,
          remaining: 4,
          resetAfter: 200,
          retryAfter: 0,
          delay: 0,
          policy: 'token-bucket',
          limits: [],
        },
      ],
    };
    expect(JSON.stringify(decision)).toBe(JSON.stringify(plain));
    expect(JSON.parse(JSON.stringify(decision))).toEqual(plain);
  });

  it('spread and structuredClone copy every field but limits (a getter), as documented', () => {
    const decision = single();
    const spread = { ...decision };
    const cloned = structuredClone(decision);
    for (const copy of [spread, cloned]) {
      expect(Object.keys(copy).sort()).toEqual([...FIELDS].sort());
      expect(copy).not.toHaveProperty('limits');
      for (const name of FIELDS)
        expect(copy[name as keyof typeof copy]).toEqual(decision[name as keyof Decision]);
    }
    // What the docs give instead: the list named, or a JSON round trip.
    expect(structuredClone({ ...decision, limits: decision.limits }).limits).toHaveLength(1);
    expect(JSON.parse(JSON.stringify(decision)).limits).toHaveLength(1);
  });

  it('is no thenable: awaited, it is the decision itself, and then is not a field of it', async () => {
    const decision = single();
    expect(typeof (decision as unknown as { then?: unknown }).then).toBe('undefined');
    expect(await decision).toBe(decision);
    expect(await Promise.resolve(decision)).toBe(decision);
    expect(Object.hasOwn(decision, 'then')).toBe(false);
    expect(Object.keys({ ...decision })).not.toContain('then');
    expect(JSON.parse(JSON.stringify(decision))).not.toHaveProperty('then');
  });

  it('of layered limits lists each limit’s decision, each with no limits of its own', () => {
    const limiter = new Limiter({
      limits: [
        { name: 'burst', algorithm: tokenBucket({ capacity: 5, refillInterval: 1000 }) },
        { name: 'day', algorithm: fixedWindow({ limit: 2, window: 86_400_000 }) },
      ],
    });
    const decision = limiter.checkSync('k', { now: NOW }) as Decision;
    expect(decision.policy).toBe('day');
    expect(decision.limits.map((d) => [d.policy, d.remaining, d.limits.length])).toEqual([
      ['burst', 4, 0],
      ['day', 1, 0],
    ]);
    expect(JSON.parse(JSON.stringify(decision)).limits).toHaveLength(2);
  });

  it('each check answers a decision of its own: an earlier one never changes', () => {
    const limiter = new Limiter({
      algorithm: fixedWindow({ limit: 3, window: 1000 }),
      store: new MemoryStore(),
    });
    const first = limiter.checkSync('k', { now: NOW }) as Decision;
    const second = limiter.checkSync('k', { now: NOW }) as Decision;
    expect(first).not.toBe(second);
    expect([first.remaining, second.remaining]).toEqual([2, 1]);
    expect([first.limits[0]!.remaining, second.limits[0]!.remaining]).toEqual([2, 1]);
  });

  it('combine of one decision that is not fresh from a store (shared, or a plain object) copies it', () => {
    const shared = decide(true, 3, 2, 100, 0, 0, 'p', undefined);
    const once = combine([shared]);
    const twice = combine([shared]);
    expect(twice.limits[0]!.limits).toEqual([]);
    expect(once.limits[0]!.limits).toEqual([]);
    const plain: Decision = { ...once, limits: [] };
    const fromPlain = combine([plain]);
    expect(fromPlain).not.toBe(plain);
    expect(fromPlain.limits).toEqual([plain]);
  });

  it('withFields replaces fields and keeps limits and shadow; a block’s refusal keeps its empty limits', () => {
    const limiter = new Limiter({
      limits: [{ algorithm: fixedWindow({ limit: 1, window: 1000 }), block: 5000 }],
    });
    limiter.checkSync('k', { now: NOW });
    const blocking = limiter.checkSync('k', { now: NOW }) as Decision;
    expect([blocking.reason, blocking.retryAfter, blocking.limits.length]).toEqual(['rate-limited', 5000, 1]);
    expect(blocking.limits[0]!.limits).toEqual([]);
    const refused = decide(false, 3, 0, 100, 100, 0, 'p', 'rate-limited');
    const shadow = combine([
      decide(true, 3, 2, 100, 0, 0, 'a', undefined),
      { ...refused, limits: [], shadow: true },
    ]);
    const copy = withFields(shadow.limits[1]!, { remaining: 1 });
    expect([copy.remaining, copy.shadow, copy.limits]).toEqual([1, true, []]);
  });
});

import { tokenBucket } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { allow, Run, refuse } from '../helpers.js';

const P = 'token-bucket';

describe('tokenBucket (continuous refill)', () => {
  it('refills partially: a fraction of a token is kept, not rounded away', () => {
    // 10 tokens, 5 back per second: one every 200 ms.
    const run = new Run(tokenBucket({ capacity: 10, refillAmount: 5, refillInterval: 1000 }));
    expect(run.at(0, 10)).toEqual(allow(10, 0, 2000, P));
    expect(run.at(100)).toEqual(refuse(10, 0, 1900, 100, P));
    expect(run.at(300)).toEqual(allow(10, 0, 1900, P)); // 1.5 tokens: one taken, half kept
    expect(run.at(400)).toEqual(allow(10, 0, 2000, P)); // the kept half plus 100 ms make a token
    expect(run.at(700, 2)).toEqual(refuse(10, 1, 1700, 100, P));
    expect(run.at(800, 2)).toEqual(allow(10, 0, 2000, P));
  });

  it('a fresh key and an idle key are full, and report nothing to reset', () => {
    const run = new Run(tokenBucket({ capacity: 3, refillInterval: '3s' }));
    expect(run.peek(0)).toEqual(allow(3, 3, 0, P));
    run.at(0, 3);
    expect(run.peek(3000)).toEqual(allow(3, 3, 0, P));
    expect(run.peek(1_000_000)).toEqual(allow(3, 3, 0, P));
    expect(run.algorithm.ttl(run.state!, run.base + 3000)).toBeLessThanOrEqual(0);
    expect(run.algorithm.ttl(run.state!, run.base + 2999)).toBeGreaterThan(0);
  });

  it('a cost above the capacity is refused with retryAfter -1 and takes nothing', () => {
    const run = new Run(tokenBucket({ capacity: 3, refillInterval: 3000 }));
    run.at(0, 1);
    expect(run.at(0, 4)).toEqual(refuse(3, 2, 1000, -1, P, 'cost-exceeds-limit'));
    expect(run.at(0, 2)).toEqual(allow(3, 0, 3000, P));
  });

  it('regression: a full burst is admitted again one refill span later at epoch-scale times (float rounding refused the last token)', () => {
    // At 1.7e12 ms one ulp is 2.4e-4 ms; seven additions of 1000/7 ms drift by up to 7e-4 ms,
    // which a slack of 1e-6 token did not cover: the 7th token came back "1 ms late".
    for (const capacity of [3, 7, 13, 30, 60]) {
      for (let offset = 0; offset < 50; offset++) {
        const run = new Run(
          tokenBucket({ capacity, refillInterval: 1000 }),
          1_700_000_000_000 + offset * 7919,
        );
        for (let i = 0; i < capacity; i++) run.at(0);
        for (let i = 0; i < capacity; i++) {
          expect(run.at(1000), `capacity ${capacity}, token ${i + 1}`).toMatchObject({ allowed: true });
        }
        expect(run.at(1000)).toMatchObject({ allowed: false, retryAfter: Math.ceil(1000 / capacity) });
      }
    }
  });

  it('regression: retryAfter is exact for slow refills (a slack in tokens admitted up to 3.6 ms early at one per hour)', () => {
    const run = new Run(tokenBucket({ capacity: 1, refillInterval: '1h' }));
    expect(run.at(0)).toEqual(allow(1, 0, 3_600_000, P));
    expect(run.at(3_599_990)).toEqual(refuse(1, 0, 10, 10, P));
    expect(run.fork().at(3_599_999)).toEqual(refuse(1, 0, 1, 1, P));
    expect(run.at(3_600_000)).toEqual(allow(1, 0, 3_600_000, P));
  });

  it('remaining is consistent with admission at a fractional rate (3 per second)', () => {
    const run = new Run(tokenBucket({ capacity: 3, refillInterval: 1000 }));
    run.at(0, 3);
    expect(run.peek(333)).toEqual(refuse(3, 0, 667, 1, P));
    expect(run.peek(334)).toEqual(allow(3, 1, 666, P));
    expect(run.peek(667)).toEqual(allow(3, 2, 333, P));
    expect(run.peek(666)).toEqual(allow(3, 1, 334, P));
  });
});

describe('tokenBucket (stepped refill, Smyte)', () => {
  it('adds whole refills and keeps the progress toward the next one across requests', () => {
    const run = new Run(
      tokenBucket({ capacity: 10, refillAmount: 1, refillInterval: 1000, refill: 'stepped' }),
    );
    expect(run.at(0, 10)).toEqual(allow(10, 0, 10_000, P));
    expect(run.at(600)).toEqual(refuse(10, 0, 9400, 400, P));
    expect(run.at(1200)).toEqual(allow(10, 0, 9800, P));
    // The 1200 ms request did not restart the clock: the next token is due at 2000, not 2200.
    expect(run.at(1800)).toEqual(refuse(10, 0, 9200, 200, P));
    expect(run.at(2000)).toEqual(allow(10, 0, 10_000, P));
    expect(run.at(4500, 2)).toEqual(allow(10, 0, 9500, P));
    expect(run.at(4999)).toEqual(refuse(10, 0, 9001, 1, P));
  });

  it("regression: a full bucket keeps its progress toward the next refill, as Smyte's reduce() does (it restarted the refill clock)", () => {
    // Issue 11 (3.6): check at t, 5 checks at t+1500, one at t+2000. Smyte's adjustAmount advances
    // lastRefilledAt by whole refill times even while the bucket is capped at full, so the refill
    // due at t+2000 comes; sluice treated the full bucket as new and refused with retryAfter 500.
    const run = new Run(
      tokenBucket({ capacity: 5, refillAmount: 2, refillInterval: 1000, refill: 'stepped' }),
    );
    expect(run.at(0)).toEqual(allow(5, 4, 1000, P));
    // Full at +1000 (4 + 2, capped at 5): the refill mark moves to +1000, not +1500.
    expect(run.at(1500)).toEqual(allow(5, 4, 500, P));
    for (let i = 0; i < 4; i++) run.at(1500);
    expect(run.state).toEqual([0, run.base + 1000]);
    expect(run.at(2000)).toEqual(allow(5, 1, 2000, P));
  });

  it("a state idle for a whole refill from empty is dropped: from then on the key is fresh (Smyte's compaction filter)", () => {
    // capacity 5, 2 back per second: ceil(5 / 2) = 3 refills bring any state to full.
    const algorithm = tokenBucket({ capacity: 5, refillAmount: 2, refillInterval: 1000, refill: 'stepped' });
    const run = new Run(algorithm);
    run.at(0, 4);
    expect(algorithm.ttl(run.state!, run.base + 2999)).toBe(1);
    expect(algorithm.ttl(run.state!, run.base + 3000)).toBe(0);
    // Before the drop the refill grid of +0 holds (refills at +1000, +2000, +3000 …) …
    const held = run.fork();
    expect(held.at(2999, 5)).toEqual(allow(5, 0, 2001, P));
    // … and at the drop the state reads as a fresh key would: full, refilled at +3000.
    const dropped = run.fork();
    const fresh = new Run(algorithm);
    expect(dropped.at(3000, 5)).toEqual(fresh.at(3000, 5));
    expect(dropped.state).toEqual(fresh.state);
    expect(dropped.peek(3999)).toEqual(refuse(5, 0, 2001, 1, P));
  });

  it('regression: a refused request on a lenient stepped bucket writes nothing (it returned a refilled copy of the state: a needless write per refusal)', () => {
    // It used to return a refilled copy of the state: equivalent, but a needless write per refusal.
    const run = new Run(
      tokenBucket({ capacity: 2, refillAmount: 1, refillInterval: 1000, refill: 'stepped' }),
    );
    run.at(0, 2);
    const before = run.state;
    expect(run.at(500)).toMatchObject({ allowed: false });
    expect(run.state).toBe(before);
    expect(run.at(1500, 3)).toMatchObject({ allowed: false, reason: 'cost-exceeds-limit' });
    expect(run.state).toBe(before);
  });
});

describe('tokenBucket strict mode (Smyte)', () => {
  it('continuous: a caller that keeps sending while empty stays refused until it pauses a whole interval', () => {
    const strict = new Run(tokenBucket({ capacity: 2, refillInterval: 2000, strict: true }));
    const lenient = new Run(tokenBucket({ capacity: 2, refillInterval: 2000 }));
    for (const run of [strict, lenient]) run.at(0, 2);
    for (const at of [500, 1000, 1500, 2000, 2500]) {
      expect(strict.at(at), `strict at +${at}`).toEqual(refuse(2, 0, 2000, 1000, P));
    }
    // The lenient bucket has admitted one request per second all along.
    expect([500, 1000, 1500, 2000, 2500].map((at) => lenient.at(at).allowed)).toEqual([
      false,
      true,
      false,
      true,
      false,
    ]);
    // A pause of one whole token interval (1000 ms) after the last refusal lets it through.
    expect(strict.fork().at(3499)).toMatchObject({ allowed: false });
    expect(strict.at(3500)).toEqual(allow(2, 0, 2000, P));
  });

  it('continuous: whole tokens in hand are kept when the clock restarts', () => {
    const run = new Run(tokenBucket({ capacity: 3, refillInterval: 3000, strict: true }));
    run.at(0, 3);
    expect(run.at(1500, 2)).toEqual(refuse(3, 1, 2000, 1000, P)); // 1.5 tokens: keeps 1, drops .5
    expect(run.at(2499, 2)).toEqual(refuse(3, 1, 2000, 1000, P));
    expect(run.at(3499, 2)).toEqual(allow(3, 0, 3000, P));
  });

  it('stepped: each refusal restarts the refill clock', () => {
    const run = new Run(tokenBucket({ capacity: 1, refillInterval: 1000, refill: 'stepped', strict: true }));
    expect(run.at(0)).toEqual(allow(1, 0, 1000, P));
    expect(run.at(900)).toEqual(refuse(1, 0, 1000, 1000, P));
    expect(run.at(1800)).toEqual(refuse(1, 0, 1000, 1000, P));
    expect(run.fork().at(2799)).toEqual(refuse(1, 0, 1000, 1000, P));
    expect(run.at(2800)).toEqual(allow(1, 0, 1000, P));
  });

  it('a cost above the capacity does not restart the clock (retrying it can never help)', () => {
    for (const refill of ['continuous', 'stepped'] as const) {
      const run = new Run(tokenBucket({ capacity: 2, refillInterval: 2000, refill, strict: true }));
      run.at(0, 2);
      expect(run.at(500, 3)).toMatchObject({ allowed: false, retryAfter: -1, reason: 'cost-exceeds-limit' });
      expect(run.fork().at(500, 3).allowed).toBe(false);
      const fresh = new Run(run.algorithm);
      expect(fresh.at(0, 3)).toMatchObject({ retryAfter: -1 });
      expect(fresh.state, `${refill}: no state stored for a fresh key`).toBeUndefined();
      expect(run.at(2000, 2), refill).toMatchObject({ allowed: true });
    }
  });
});

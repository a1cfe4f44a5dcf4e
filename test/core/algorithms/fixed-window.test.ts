import { fixedWindow } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { allow, Run, refuse } from '../helpers.js';

const P = 'fixed-window';

describe('fixedWindow', () => {
  it('lets 2 × limit through around a window boundary (the documented double burst)', () => {
    const run = new Run(fixedWindow({ limit: 5, window: 1000 }));
    for (let i = 0; i < 5; i++) expect(run.at(999)).toMatchObject({ allowed: true, resetAfter: 1 });
    expect(run.at(999)).toEqual(refuse(5, 0, 1, 1, P));
    for (let i = 0; i < 5; i++) expect(run.at(1000)).toMatchObject({ allowed: true, resetAfter: 1000 });
    // Ten admitted within 2 ms; the eleventh waits for the next window.
    expect(run.at(1001)).toEqual(refuse(5, 0, 999, 999, P));
  });

  it('windows are aligned to the epoch, not to the first request', () => {
    const run = new Run(fixedWindow({ limit: 2, window: '1m' }));
    expect(run.at(45_000)).toEqual(allow(2, 1, 15_000, P));
    expect(run.at(59_999)).toEqual(allow(2, 0, 1, P));
    expect(run.at(60_000)).toEqual(allow(2, 1, 60_000, P));
  });

  it('retryAfter is the start of the next window, exactly', () => {
    const run = new Run(fixedWindow({ limit: 1, window: 1000 }));
    run.at(10);
    expect(run.at(500)).toEqual(refuse(1, 0, 500, 500, P));
    expect(run.at(999)).toMatchObject({ allowed: false });
    expect(run.at(1000)).toMatchObject({ allowed: true });
  });

  it('a cost above the limit is refused for good; a fresh key reports no reset', () => {
    const run = new Run(fixedWindow({ limit: 3, window: 1000 }));
    expect(run.peek(0)).toEqual(allow(3, 3, 0, P));
    expect(run.at(0, 4)).toEqual(refuse(3, 3, 0, -1, P, 'cost-exceeds-limit'));
    expect(run.at(0, 3)).toEqual(allow(3, 0, 1000, P));
    expect(run.at(0, 4)).toEqual(refuse(3, 0, 1000, -1, P, 'cost-exceeds-limit'));
  });

  it('regression: a late (replayed, out-of-order) request does not reset the newer window (it replaced [2, w1] by [1, w0], and the full window admitted two more)', () => {
    // It used to be counted in its own older window, overwriting the newer window's count: two
    // more requests then passed in a window that was already full.
    const run = new Run(fixedWindow({ limit: 2, window: 1000 }));
    run.at(1000);
    run.at(1000);
    expect(run.at(500)).toEqual(refuse(2, 0, 1500, 1500, P));
    expect(run.at(1001)).toEqual(refuse(2, 0, 999, 999, P));
    const late = new Run(run.algorithm);
    late.at(1000);
    expect(late.at(500)).toEqual(allow(2, 0, 1500, P)); // counted in the window of 1000
    expect(late.at(1001)).toMatchObject({ allowed: false });
  });

  it('state expires at the end of its window', () => {
    const run = new Run(fixedWindow({ limit: 3, window: 1000 }));
    run.at(200);
    expect(run.algorithm.ttl(run.state!, run.base + 999)).toBe(1);
    expect(run.algorithm.ttl(run.state!, run.base + 1000)).toBe(0);
  });
});

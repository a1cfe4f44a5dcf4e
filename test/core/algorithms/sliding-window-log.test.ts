import { slidingWindowLog } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { allow, Run, refuse } from '../helpers.js';

const P = 'sliding-window-log';

describe('slidingWindowLog', () => {
  it('has no double burst at a window boundary', () => {
    const run = new Run(slidingWindowLog({ limit: 5, window: 1000 }));
    for (let i = 0; i < 5; i++) run.at(999);
    expect(run.at(1000)).toEqual(refuse(5, 0, 999, 999, P));
    expect(run.at(1998)).toEqual(refuse(5, 0, 1, 1, P));
    expect(run.at(1999, 5)).toEqual(allow(5, 0, 1000, P));
  });

  it('retryAfter waits for as many old entries as the cost needs', () => {
    const run = new Run(slidingWindowLog({ limit: 4, window: 1000 }));
    run.at(0);
    run.at(100, 2);
    run.at(200);
    // 4 used; a cost of 3 needs the entries at 0 and 100 gone: at 1100.
    expect(run.at(300, 3)).toEqual(refuse(4, 0, 900, 800, P));
    expect(run.fork().at(1099, 3)).toMatchObject({ allowed: false, retryAfter: 1 });
    expect(run.at(1100, 3)).toEqual(allow(4, 0, 1000, P));
  });

  it('keeps only the entries inside the window', () => {
    const run = new Run(slidingWindowLog({ limit: 3, window: 1000 }));
    for (let at = 0; at < 100_000; at += 400) run.at(at);
    expect((run.state as readonly number[]).length).toBeLessThanOrEqual(2 * 3);
  });

  it('keeps the log sorted when replayed times arrive out of order', () => {
    const run = new Run(slidingWindowLog({ limit: 3, window: 1000 }));
    run.at(500);
    run.at(100);
    run.at(300, 1);
    expect(run.state).toEqual([run.base + 100, 1, run.base + 300, 1, run.base + 500, 1]);
    expect(run.at(1100)).toEqual(allow(3, 0, 1000, P));
  });

  it('a cost above the limit is refused for good', () => {
    const run = new Run(slidingWindowLog({ limit: 2, window: 1000 }));
    expect(run.at(0, 3)).toEqual(refuse(2, 2, 0, -1, P, 'cost-exceeds-limit'));
    expect(run.state).toBeUndefined();
  });
});

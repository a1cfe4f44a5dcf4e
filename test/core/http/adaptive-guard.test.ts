import type { Lease } from '@sluice/core';
import { AdaptiveConcurrency } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { adaptiveGuard } from '../../../packages/core/src/http/adaptive-guard.js';
import type { AdapterDefaults } from '../../../packages/core/src/http/reporter.js';
import { recording } from '../shedding/adaptive-helpers.js';

const errors: Error[] = [];
const defaults: AdapterDefaults<unknown> = {
  onError: (error) => errors.push(error),
  onWarning: () => undefined,
  onReleaseError: () => undefined,
};

describe('adaptiveGuard: what a response tells the controller', () => {
  const setup = (options: object = {}) => {
    const controller = recording(10);
    const limiter = new AdaptiveConcurrency({ controller, clock: () => 5 });
    const guard = adaptiveGuard('adaptiveConcurrency', { limiter, ...options }, defaults);
    const run = (status: number, finished = true) => {
      const lease = guard.enter({}) as Lease;
      expect(lease.decision.allowed).toBe(true);
      guard.ended({}, lease, () => status, finished);
    };
    return { controller, limiter, run };
  };

  it('by default 503 and 504 are drops, a 429 is ignored, other statuses (500 included) are latencies', () => {
    const { controller, limiter, run } = setup();
    for (const status of [200, 500, 503, 504, 429, 302]) run(status);
    expect(controller.samples.map((s) => s.dropped)).toEqual([false, false, true, true, false]);
    expect(limiter.inFlight).toBe(0);
  });

  it("a client gone is a drop by default, nothing with clientGone: 'ignore'; the status is not read", () => {
    const gone = setup();
    gone.run(200, false);
    expect(gone.controller.samples.map((s) => s.dropped)).toEqual([true]);
    const ignored = setup({ clientGone: 'ignore' });
    ignored.run(200, false);
    expect(ignored.controller.samples).toEqual([]);
    expect(ignored.limiter.inFlight).toBe(0);
  });

  it('an outcome function that answers nonsense or throws frees the slot and tells onError, never the client', () => {
    errors.length = 0;
    const odd = setup({ outcome: () => 'constructor' });
    odd.run(200);
    expect(odd.limiter.inFlight).toBe(0);
    const throwing = setup({
      outcome: () => {
        throw new Error('classifier broke');
      },
    });
    throwing.run(200);
    expect(throwing.limiter.inFlight).toBe(0);
    expect(errors.map((e) => e.message)).toEqual([
      `outcome must return 'latency', 'drop' or 'ignore'; got "constructor"`,
      'classifier broke',
    ]);
  });
});

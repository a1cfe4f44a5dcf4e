import { type Decision, fixedWindow, leakyBucketQueue, MemoryStore } from '@sluice/core';
import {
  type ClientResponse,
  decide,
  HttpLimiter,
  type HttpLimitOptions,
  type RequestAccessBase,
} from '@sluice/core/adapter';
import { describe, expect, it } from 'vitest';
import { DelayMode } from '../../../packages/core/src/http/delay-mode.js';

// Issue 35: delay mode answers what a decision asks (a value), and HttpLimiter.handle runs the
// steps (hold, check again, give back) without DelayMode calling back into the limiter. Time is a
// clock the test moves: `hold` advances it instead of sleeping.

interface Req {
  id: number;
}
const access: RequestAccessBase<Req> = {
  ip: () => '127.0.0.1',
  method: () => 'GET',
  route: () => undefined,
  header: () => undefined,
  proxyTrust: () => 'none',
};

/** A client that stays, or leaves when `leave()` is called (its 'close' fires). */
function client(): ClientResponse & { leave(): void } {
  const listeners = new Set<() => void>();
  const response = {
    writableEnded: false,
    destroyed: false,
    once: (_event: 'close', listener: () => void) => listeners.add(listener),
    removeListener: (_event: 'close', listener: () => void) => listeners.delete(listener),
    leave() {
      response.destroyed = true;
      for (const listener of [...listeners]) listener();
    },
  };
  return response;
}

const reporter = { error: () => undefined } as never;

describe('DelayMode.next: what a decision asks before it is acted on', () => {
  const refused = (retryAfter: number, reason: Decision['reason'] = 'rate-limited') =>
    decide(false, 1, 0, retryAfter, retryAfter, 0, 'w', reason);
  const queued = (delay: number) => decide(true, 5, 3, delay, 0, delay, 'q', undefined);
  const hold = async () => undefined;

  it('an admission without delay: nothing, act now', () => {
    expect(new DelayMode(true, 5000, hold, reporter).next(queued(0))).toBeUndefined();
  });

  it("a queue's delay: held that long, then passed on; past maxDelay: refused", () => {
    const mode = new DelayMode(false, 5000, hold, reporter);
    expect(mode.next(queued(1200))).toEqual({ kind: 'queue', ms: 1200 });
    expect(mode.next(queued(5000))).toEqual({ kind: 'queue', ms: 5000 });
    expect(mode.next(queued(5001))).toEqual({ kind: 'too-long' });
  });

  it("a refusal: checked again after retryAfter under onLimit 'delay' within maxDelay only", () => {
    const delaying = new DelayMode(true, 5000, hold, reporter);
    expect(delaying.next(refused(800))).toEqual({ kind: 'retry', ms: 800 });
    expect(delaying.next(refused(5001))).toBeUndefined();
    expect(delaying.next(refused(800, 'blocked'))).toBeUndefined();
    expect(new DelayMode(false, 5000, hold, reporter).next(refused(800))).toBeUndefined();
  });

  it('a queue admission past maxDelay becomes a refusal naming its wait, the units given back counted', () => {
    const mode = new DelayMode(false, 1000, hold, reporter);
    const admitted = decide(true, 5, 2, 3000, 0, 3000, 'q', undefined);
    const refusal = mode.tooLong({ ...admitted, limits: [admitted] }, 1);
    expect(refusal).toMatchObject({ allowed: false, remaining: 3, retryAfter: 3000, delay: 0 });
    expect(refusal.limits[0]).toMatchObject({ allowed: false, remaining: 3, retryAfter: 3000 });
  });
});

describe('HttpLimiter.handle in delay mode', () => {
  /** `moves`: each hold moves the clock by its ms (else the clock stands still). */
  function setup(options: Partial<HttpLimitOptions<Req>>, onHold?: (ms: number) => void, moves = true) {
    let now = Date.UTC(2026, 0, 1, 0, 0, 0, 100);
    const holds: number[] = [];
    const store = new MemoryStore({ clock: () => now });
    const limiter = new HttpLimiter<Req>(
      'test',
      {
        store,
        onLimit: 'delay',
        hold: async (ms) => {
          holds.push(ms);
          if (moves) now += ms;
          onHold?.(ms);
        },
        ...options,
      } as HttpLimitOptions<Req>,
      access,
      { onError: () => undefined, onWarning: () => undefined, onReleaseError: () => undefined },
    );
    return { limiter, holds };
  }

  it('a refusal within maxDelay is held until its retryAfter, then checked once more and admitted', async () => {
    const { limiter, holds } = setup({ algorithm: fixedWindow({ limit: 1, window: '1s' }) });
    expect((await limiter.handle({ id: 1 }, client()))?.allowed).toBe(true);
    const second = await limiter.handle({ id: 2 }, client());
    expect(second?.allowed).toBe(true);
    expect(holds).toEqual([900]);
  });

  it('a request refused again after its wait is refused, not held a second time', async () => {
    // Each hold lets another request take the unit freed meanwhile.
    let rival: Promise<unknown> | undefined;
    const { limiter, holds } = setup({ algorithm: fixedWindow({ limit: 1, window: '1s' }) }, () => {
      rival ??= Promise.resolve(limiter.evaluate({ id: 99 }));
    });
    await limiter.handle({ id: 1 }, client());
    const late = await limiter.handle({ id: 2 }, client());
    await rival;
    expect(late).toMatchObject({ allowed: false, reason: 'rate-limited' });
    expect(holds).toEqual([900]);
  });

  it("a queue's admission is held for its delay, then passed on; a client gone meanwhile gets null and its slot back", async () => {
    const queue = leakyBucketQueue({ rate: 1, period: '1s', queue: 5 });
    let leaving: (() => void) | undefined;
    const { limiter, holds } = setup({ algorithm: queue, name: 'q' }, () => leaving?.(), false);
    expect((await limiter.handle({ id: 1 }, client()))?.delay).toBe(0);
    expect(await limiter.handle({ id: 2 }, client())).toMatchObject({ allowed: true, delay: 1000 });
    const gone = client();
    leaving = () => gone.leave();
    expect(await limiter.handle({ id: 3 }, gone)).toBeNull();
    leaving = undefined;
    expect(holds).toEqual([1000, 2000]);
    // Its slot went back: the next request waits as long as the one that left would have.
    expect(await limiter.handle({ id: 4 }, client())).toMatchObject({ allowed: true, delay: 2000 });
  });
});

import type { LimitCall } from '@sluice/core';
import { fixedWindow, MemoryStore, type Store } from '@sluice/core';
import { HttpLimiter } from '@sluice/core/adapter';
import { timedStore } from '@sluice/otel';
import { describe, expect, it } from 'vitest';

/**
 * Every member of the Store contract, optional ones included. Typed against `Store`: a member
 * added to the contract fails the typecheck here until this test (and so the wrapper) knows it.
 */
const MEMBERS = {
  consume: 'timed',
  peek: 'timed',
  reset: 'timed',
  shutdown: 'passed',
  consumeOne: 'timed',
  refund: 'timed',
  charge: 'timed',
  leases: 'passed',
  synchronous: 'passed',
} as const satisfies Record<keyof Store, 'timed' | 'passed'>;

const T0 = Date.UTC(2026, 0, 1);
const algorithm = fixedWindow({ limit: 10, window: '1m' });
const call = (cost: number): LimitCall => ({ algorithm, key: 'k', cost, policy: 'w' });

describe('timedStore', () => {
  it('regression: passes on every member of the Store contract, optional ones included (charge was dropped)', () => {
    const memory = new MemoryStore({ clock: () => T0 });
    const timed = timedStore(memory, () => undefined);
    for (const member of Object.keys(MEMBERS) as (keyof Store)[]) {
      expect([member, memory[member] !== undefined]).toEqual([member, true]);
      expect([member, timed[member] !== undefined]).toEqual([member, true]);
    }
    expect(timed.leases).toBe(memory.leases);
  });

  it('times each method of the store, and leaves out those the store does not have', async () => {
    const memory = new MemoryStore({ clock: () => T0 });
    const seen: string[] = [];
    const timed = timedStore(memory, (operation) => seen.push(operation));
    timed.consume([call(1)], undefined);
    timed.consumeOne!(algorithm, 'k', 1, 'w', undefined);
    timed.peek([call(1)], undefined);
    timed.refund!([call(1)], undefined);
    expect(timed.charge!([call(3)], undefined)).toEqual([3]);
    timed.reset([call(1)]);
    await timed.shutdown();
    expect(seen).toEqual(['consume', 'consume', 'peek', 'refund', 'charge', 'reset']);
    const timedMembers = Object.entries(MEMBERS)
      .filter(([, how]) => how === 'timed')
      .map(([m]) => m);
    expect(new Set(seen)).toEqual(new Set(timedMembers.map((m) => (m === 'consumeOne' ? 'consume' : m))));

    // A store without the optional members: the wrapper has none of them either (a `charge` that
    // silently did nothing would hide that the store cannot charge).
    const bare: Store = {
      consume: (calls, now) => memory.consume(calls, now),
      peek: (calls, now) => memory.peek(calls, now),
      reset: (calls) => memory.reset(calls),
      shutdown: () => undefined,
    };
    const plain = timedStore(bare, () => undefined);
    expect([plain.refund, plain.charge, plain.consumeOne, plain.leases]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('regression: settle above the estimate takes the extra units behind it (it silently did nothing)', async () => {
    const store = timedStore(new MemoryStore({ clock: () => T0 }), () => undefined);
    const limiter = new HttpLimiter<{ id: string }>(
      'rateLimit',
      { name: 'w', algorithm, key: (req) => req.id, cost: 2, store },
      {
        ip: () => undefined,
        method: () => 'GET',
        route: () => undefined,
        header: () => undefined,
        proxyTrust: () => 'none',
      },
      { onError: () => undefined, onWarning: () => undefined, onReleaseError: () => undefined },
    );
    const req = { id: 'user' };
    expect((await limiter.evaluate(req))?.remaining).toBe(8);
    await limiter.settle(req, 5);
    // 5 of 10 taken (8 left before: the charge never reached the store).
    expect((await limiter.peek({ id: 'user' }))?.remaining).toBe(5);
  });
});

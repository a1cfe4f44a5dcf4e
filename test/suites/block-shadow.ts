import {
  type Algorithm,
  type Decision,
  ErrorCode,
  fixedWindow,
  gcra,
  type LimitDefinition,
  Limiter,
  type LimitKeys,
  leakyBucketQueue,
  type Store,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allow, fields, refuse } from './store-behaviour.js';

const HOUR = 3_600_000;

/**
 * Blocks after a refusal and shadow mode, as every store that supports them must behave through
 * `Limiter` (the memory store, Redis standalone and Cluster): exact decisions on explicit times,
 * the block's streak and decay, all-or-nothing with shadow limits that never veto, on the
 * single-limit, lean batch and generic batch paths of the Redis store alike.
 */
export function describeBlockAndShadow(name: string, makeStore: () => Store | Promise<Store>): void {
  describe(`blocks and shadow mode: ${name}`, () => {
    let store: Store;
    const t0 = Math.ceil(Date.now() / HOUR) * HOUR + HOUR;
    const run = Math.random().toString(36).slice(2, 10);
    let serial = 0;
    const freshKey = (label: string) => `sluice-test:${run}:${++serial}:${label}`;

    beforeAll(async () => {
      store = await makeStore();
    });
    afterAll(async () => {
      await store?.shutdown();
    });

    const limiter = (...limits: LimitDefinition[]) => new Limiter({ limits, store });
    const check = async (l: Limiter, keys: LimitKeys, at: number, cost = 1) =>
      fields(await l.check(keys, { now: t0 + at, cost }));
    const checkAll = async (l: Limiter, keys: LimitKeys, at: number): Promise<Decision> =>
      l.check(keys, { now: t0 + at });

    describe('block', () => {
      it('a refusal blocks the key for the duration: refused as blocked, not counted, then free', async () => {
        const l = limiter({ name: 'w', algorithm: fixedWindow({ limit: 2, window: 1000 }), block: '5s' });
        const key = freshKey('block');
        expect(await check(l, key, 0)).toEqual(allow(2, 1, 1000, 'w'));
        expect(await check(l, key, 0)).toEqual(allow(2, 0, 1000, 'w'));
        // The refusal that starts the block: rate-limited, to retry when the block ends.
        expect(await check(l, key, 10)).toEqual(refuse(2, 0, 5000, 5000, 'w'));
        // The window is over, the block is not.
        expect(await check(l, key, 1000)).toEqual(refuse(2, 0, 4010, 4010, 'w', 'blocked'));
        expect(await check(l, key, 5009)).toEqual(refuse(2, 0, 1, 1, 'w', 'blocked'));
        // Blocked requests were not counted: a fresh window.
        expect(await check(l, key, 5010)).toEqual(allow(2, 1, 990, 'w'));
        expect(await l.peek(key, { now: t0 + 5010 })).toMatchObject({ allowed: true, remaining: 1 });
      });

      it('reset: a block that starts forgets the limit’s count, so the key starts afresh when it ends', async () => {
        // A sliding log of 3 per 10 s, blocked 2 s: without reset, the hits before the block
        // would still count after it (the window is longer than the block).
        const algorithm = slidingWindowLog({ limit: 3, window: 10_000 });
        const forgets = limiter({ name: 'f', algorithm, block: { duration: 2000, reset: true } });
        const keeps = limiter({ name: 'k', algorithm, block: { duration: 2000 } });
        // With reset the retry is the block's end; without, when the log frees a slot (10 s after the first hit).
        for (const [l, label, retryAfter] of [
          [forgets, 'reset', 2000],
          [keeps, 'kept', 9997],
        ] as const) {
          const key = freshKey(label);
          for (let at = 0; at < 3; at++) expect(await check(l, key, at)).toMatchObject({ allowed: true });
          expect(await check(l, key, 3)).toMatchObject({
            allowed: false,
            reason: 'rate-limited',
            retryAfter,
          });
          expect(await check(l, key, 1000)).toMatchObject({ allowed: false, reason: 'blocked' });
        }
        const reset = freshKey('reset-after');
        for (let at = 0; at < 3; at++) await check(forgets, reset, at);
        await check(forgets, reset, 3);
        // The block's end: three fresh hits, as if the key had never been seen.
        for (let n = 2; n >= 0; n--)
          expect(await check(forgets, reset, 2003)).toMatchObject({ allowed: true, remaining: n });
        expect(await check(forgets, reset, 2003)).toMatchObject({ allowed: false, reason: 'rate-limited' });
        const kept = freshKey('kept-after');
        for (let at = 0; at < 3; at++) await check(keeps, kept, at);
        await check(keeps, kept, 3);
        // Without reset the three hits still fill the log until 10 s after each.
        expect(await check(keeps, kept, 2003)).toMatchObject({ allowed: false, reason: 'rate-limited' });
      });

      it('escalates for repeat offenders (factor, max) and forgets the streak after decay', async () => {
        const block = { duration: 1000, factor: 2, max: 3000, decay: 10_000 };
        const l = limiter({ name: 'w', algorithm: fixedWindow({ limit: 1, window: 100 }), block });
        const key = freshKey('escalate');
        const waits: number[] = [];
        // Each round: one admitted, one refused (starting the next block), at the block's end.
        let at = 0;
        for (let round = 0; round < 5; round++) {
          expect(await check(l, key, at), `round ${round}`).toMatchObject({ allowed: true });
          const refused = await check(l, key, at);
          expect(refused.reason).toBe('rate-limited');
          waits.push(refused.retryAfter);
          at += refused.retryAfter;
        }
        expect(waits).toEqual([1000, 2000, 3000, 3000, 3000]);
        // The last block ended at `at`; the streak is remembered 10 s more.
        expect(await check(l, key, at + 9_999)).toMatchObject({ allowed: true });
        expect((await check(l, key, at + 9_999)).retryAfter).toBe(3000);
        const after = at + 9_999 + 3000 + 10_000;
        expect(await check(l, key, after)).toMatchObject({ allowed: true });
        expect((await check(l, key, after)).retryAfter).toBe(1000);
      });

      it('layered: a blocked limit refuses the request and consumes no other limit', async () => {
        const l = limiter(
          { name: 'hour', algorithm: fixedWindow({ limit: 100, window: HOUR }) },
          { name: 'burst', algorithm: gcra({ rate: 1, period: 1000, burst: 1 }), block: '1m' },
        );
        const key = freshKey('layered-block');
        expect(await check(l, key, 0)).toMatchObject({ allowed: true });
        const started = await checkAll(l, key, 0);
        expect(started.limits.map(fields)).toEqual([
          allow(100, 99, HOUR, 'hour'),
          refuse(1, 0, 60_000, 60_000, 'burst'),
        ]);
        for (let at = 1000; at < 60_000; at += 10_000) {
          const blocked = await checkAll(l, key, at);
          expect(fields(blocked)).toEqual(refuse(1, 0, 60_000 - at, 60_000 - at, 'burst', 'blocked'));
        }
        expect(await check(l, key, 60_000)).toEqual(allow(1, 0, 1000, 'burst'));
        const seen = await l.peek(key, { now: t0 + 60_000 });
        expect(seen.limits[0]).toMatchObject({ policy: 'hour', remaining: 98 });
      });

      it('peek reports a block; reset forgets it and its streak', async () => {
        const block = { duration: 1000, factor: 3 };
        const l = limiter({
          name: 'tb',
          algorithm: tokenBucket({ capacity: 1, refillInterval: 100 }),
          block,
        });
        const key = freshKey('reset');
        await check(l, key, 0);
        expect((await check(l, key, 0)).retryAfter).toBe(1000);
        expect(fields(await l.peek(key, { now: t0 + 500 }))).toEqual(refuse(1, 0, 500, 500, 'tb', 'blocked'));
        await check(l, key, 1000);
        expect((await check(l, key, 1000)).retryAfter).toBe(3000);
        await l.reset(key);
        expect(await check(l, key, 1500)).toMatchObject({ allowed: true });
        expect((await check(l, key, 1500)).retryAfter).toBe(1000);
      });

      it('a cost no retry can satisfy does not block', async () => {
        const l = limiter({ name: 'w', algorithm: fixedWindow({ limit: 2, window: 1000 }), block: '1m' });
        const key = freshKey('cost');
        expect(await check(l, key, 0, 3)).toMatchObject({ allowed: false, reason: 'cost-exceeds-limit' });
        expect(await check(l, key, 0)).toMatchObject({ allowed: true });
      });

      it('is validated at creation with coded errors', () => {
        const algorithm = fixedWindow({ limit: 1, window: 1000 });
        for (const block of ['soon', 0, { duration: '1m', factor: 0.5 }, { duration: '1h', max: '1m' }]) {
          expect(() => limiter({ algorithm, block: block as never })).toThrow(
            expect.objectContaining({ option: expect.stringMatching(/^limits\[0\]\.block/) }),
          );
        }
        expect(() => limiter({ algorithm, block: { duration: '1m', ban: true } as never })).toThrow(
          expect.objectContaining({ code: ErrorCode.UNKNOWN_OPTION, option: 'ban' }),
        );
      });
    });

    describe('shadow mode', () => {
      it('a shadow limit reports its refusal but never vetoes: the enforced limit counts on', async () => {
        const l = limiter(
          { name: 'enforced', algorithm: fixedWindow({ limit: 5, window: 1000 }) },
          { name: 'new', algorithm: tokenBucket({ capacity: 1, refillInterval: 1000 }), enforce: false },
        );
        const key = freshKey('shadow');
        expect(await check(l, key, 0)).toEqual(allow(5, 4, 1000, 'enforced'));
        const second = await checkAll(l, key, 0);
        expect(fields(second)).toEqual(allow(5, 3, 1000, 'enforced'));
        expect(second.limits.map(fields)).toEqual([
          allow(5, 3, 1000, 'enforced'),
          refuse(1, 0, 1000, 1000, 'new'),
        ]);
        expect(second.limits.map((d) => d.shadow)).toEqual([undefined, true]);
        // The shadow bucket is consumed as if enforced when it admits: one token back at +1000.
        const later = await checkAll(l, key, 1000);
        expect(later.limits.map(fields)).toEqual([allow(5, 4, 1000, 'enforced'), allow(1, 0, 1000, 'new')]);
      });

      it('an enforced refusal consumes no shadow limit', async () => {
        const shadowWindow = slidingWindowLog({ limit: 5, window: 1000 });
        const l = limiter(
          { name: 'enforced', algorithm: fixedWindow({ limit: 1, window: 1000 }) },
          { name: 'shadow', algorithm: shadowWindow, enforce: false },
        );
        const key = freshKey('veto');
        await check(l, key, 0);
        const refused = await checkAll(l, key, 0);
        expect(fields(refused)).toEqual(refuse(1, 0, 1000, 1000, 'enforced'));
        expect(refused.limits.map(fields)).toEqual([
          refuse(1, 0, 1000, 1000, 'enforced'),
          allow(5, 4, 1000, 'shadow'),
        ]);
      });

      it('a single shadow limit never refuses, and reports what it would have done', async () => {
        const l = limiter({
          name: 'only',
          algorithm: gcra({ rate: 1, period: 1000, burst: 1 }),
          enforce: false,
        });
        const key = freshKey('single');
        await check(l, key, 0);
        const decision = await checkAll(l, key, 0);
        expect(decision).toMatchObject({ allowed: true, reason: undefined, retryAfter: 0, policy: 'only' });
        expect(decision.limits.map(fields)).toEqual([refuse(1, 0, 1000, 1000, 'only')]);
      });

      it('across keys (another Cluster slot): a shadow refusal does not veto nor refund the others', async () => {
        const l = limiter(
          { name: 'ip', algorithm: fixedWindow({ limit: 3, window: 1000 }) },
          { name: 'user', algorithm: fixedWindow({ limit: 1, window: 1000 }), enforce: false },
        );
        const [ip, user] = [freshKey('ip'), freshKey('user')];
        await check(l, [ip, user], 0);
        const decision = await checkAll(l, [ip, user], 0);
        expect(decision.allowed).toBe(true);
        expect(decision.limits.map(fields)).toEqual([
          allow(3, 1, 1000, 'ip'),
          refuse(1, 0, 1000, 1000, 'user'),
        ]);
        expect(await check(l, [ip, user], 0)).toEqual(allow(3, 0, 1000, 'ip'));
      });

      it('a shadow limit with a block reports the block and still never vetoes', async () => {
        const algorithms: Algorithm[] = [
          tokenBucket({ capacity: 10, refillInterval: 1000 }),
          slidingWindowLog({ limit: 10, window: 1000 }),
        ];
        for (const enforced of algorithms) {
          const l = limiter(
            { name: 'enforced', algorithm: enforced },
            {
              name: 'shadow',
              algorithm: fixedWindow({ limit: 1, window: 1000 }),
              enforce: false,
              block: '1m',
            },
          );
          const key = freshKey('shadow-block');
          await check(l, key, 0);
          const started = await checkAll(l, key, 0);
          expect(started.allowed).toBe(true);
          expect(fields(started.limits[1]!)).toEqual(refuse(1, 0, 60_000, 60_000, 'shadow'));
          const blocked = await checkAll(l, key, 2000);
          expect(blocked.allowed).toBe(true);
          expect(fields(blocked.limits[1]!)).toEqual(refuse(1, 0, 58_000, 58_000, 'shadow', 'blocked'));
          expect(blocked.limits[0]!.remaining).toBe(9);
        }
      });

      it('is validated at creation with coded errors', () => {
        expect(() =>
          limiter({ algorithm: fixedWindow({ limit: 1, window: 1 }), enforce: 'no' as never }),
        ).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_OPTION, option: 'limits[0].enforce' }));
        const queue = leakyBucketQueue({ rate: 1, period: 1000, burst: 1, queue: 1 });
        expect(() => limiter({ algorithm: queue, enforce: false })).toThrow(
          expect.objectContaining({ code: ErrorCode.INVALID_OPTION, option: 'limits[0].enforce' }),
        );
      });
    });
  });
}

/**
 * Clock skew between app servers sharing one Redis. With `time: 'redis'` every server reads Redis
 * `TIME`, so skewed clocks change nothing: the count stays exact. With `time: 'client'` a server
 * whose clock runs ahead sees the others' state as older than it is: the extra admissions are
 * measured here and bounded (see RELIABILITY.md).
 */
import { randomUUID } from 'node:crypto';
import {
  type Algorithm,
  type Decision,
  fixedWindow,
  gcra,
  Limiter,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import { RedisStore } from '@sluice/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from '../redis/client-family.js';
import { connectRedis, uniquePrefix } from '../redis/clients.js';
import { writeResults } from './helpers.js';

const LIMIT = 10;
const PERIOD = 100_000; // ms: one unit per 10 s
/** The algorithms and the most a server `skew` ms ahead can over-admit after the others used it all. */
const ALGORITHMS: { name: string; algorithm: Algorithm; bound: (skew: number, now: number) => number }[] = [
  {
    name: 'token-bucket',
    algorithm: tokenBucket({ capacity: LIMIT, refillInterval: PERIOD }),
    bound: (skew) => Math.floor((skew * LIMIT) / PERIOD) + 1,
  },
  {
    name: 'gcra',
    algorithm: gcra({ rate: LIMIT, period: PERIOD }),
    bound: (skew) => Math.floor((skew * LIMIT) / PERIOD) + 1,
  },
  {
    name: 'sliding-window-log',
    algorithm: slidingWindowLog({ limit: LIMIT, window: PERIOD }),
    // Entries expire `skew` early: only those older than window − skew, none within a burst.
    bound: (skew) => (skew >= PERIOD ? LIMIT : 0),
  },
  {
    name: 'sliding-window-counter',
    algorithm: slidingWindowCounter({ limit: LIMIT, window: PERIOD }),
    bound: (skew) => Math.ceil((skew * LIMIT) / PERIOD) + 1,
  },
  {
    name: 'fixed-window',
    algorithm: fixedWindow({ limit: LIMIT, window: PERIOD }),
    // A whole extra window when the two clocks are on either side of a window boundary.
    bound: (skew, now) => (Math.floor(now / PERIOD) === Math.floor((now + skew) / PERIOD) ? 0 : LIMIT),
  },
];

const SKEWS = [5_000, 30_000, -30_000];
const figures: Record<string, Record<string, Record<string, number>>> = { redis: {}, client: {} };
function record(time: 'redis' | 'client', name: string, skew: number, extra: number): void {
  const byTime = figures[time]!;
  byTime[name] = { ...byTime[name], [String(skew)]: extra };
}
afterAll(() => writeResults('clock-skew', { limit: LIMIT, periodMs: PERIOD, extraAdmitted: figures }));

let a: Redis;
let b: Redis;
beforeAll(async () => {
  [a, b] = await Promise.all([connectRedis(), connectRedis()]);
});
afterAll(() => {
  a.disconnect();
  b.disconnect();
});

/** Server A uses the whole limit; server B, `skew` ms ahead, then tries as many again. */
async function extra(
  time: 'redis' | 'client',
  algorithm: Algorithm,
  skew: number,
): Promise<{ a: number; extra: number; now: number }> {
  const prefix = uniquePrefix('skew');
  const now = Date.now();
  const server = (client: Redis, offset: number) =>
    new Limiter({
      algorithm,
      store: new RedisStore({ client, prefix, time, clock: () => Date.now() + offset, timeout: 5_000 }),
    });
  const [first, second] = [server(a, 0), server(b, skew)];
  const key = randomUUID();
  let admittedA = 0;
  let admittedB = 0;
  for (let i = 0; i < LIMIT + 5; i++) if (((await first.check(key)) as Decision).allowed) admittedA++;
  for (let i = 0; i < LIMIT + 5; i++) if (((await second.check(key)) as Decision).allowed) admittedB++;
  return { a: admittedA, extra: admittedB, now };
}

describe("time: 'redis': servers whose clocks differ by seconds stay exact", () => {
  for (const { name, algorithm } of ALGORITHMS) {
    it(`${name}: no extra admission at any skew`, async () => {
      for (const skew of SKEWS) {
        const result = await extra('redis', algorithm, skew);
        record('redis', name, skew, result.extra);
        expect(result.a).toBe(LIMIT);
        expect(result.extra, `skew ${skew}`).toBe(0);
      }
    });
  }
});

describe("time: 'client': the deviation a skewed clock causes is bounded", () => {
  for (const { name, algorithm, bound } of ALGORITHMS) {
    it(`${name}: a server ahead over-admits at most its bound; a server behind never over-admits`, async () => {
      for (const skew of SKEWS) {
        const result = await extra('client', algorithm, skew);
        record('client', name, skew, result.extra);
        expect(result.a).toBe(LIMIT);
        if (skew < 0) expect(result.extra, `skew ${skew}`).toBe(0);
        else expect(result.extra, `skew ${skew}`).toBeLessThanOrEqual(bound(skew, result.now));
      }
    });
  }

  it('the deviation is real: a token bucket 30 s ahead refills 3 units (rate × skew)', async () => {
    expect((await extra('client', ALGORITHMS[0]!.algorithm, 30_000)).extra).toBe(3);
  });

  it('fixed window, worst case: clocks on either side of a window boundary admit a whole extra window', async () => {
    const limiter = new Limiter({
      algorithm: fixedWindow({ limit: LIMIT, window: PERIOD }),
      store: new RedisStore({ client: a, prefix: uniquePrefix('skew-fw'), timeout: 5_000 }),
    });
    const boundary = Math.ceil(Date.now() / PERIOD) * PERIOD;
    const key = randomUUID();
    let admitted = 0;
    // Server A's clock reads 1 s before the boundary, server B's 4 s after (5 s of skew).
    for (let i = 0; i < LIMIT + 5; i++)
      if (((await limiter.check(key, { now: boundary - 1_000 })) as Decision).allowed) admitted++;
    for (let i = 0; i < LIMIT + 5; i++)
      if (((await limiter.check(key, { now: boundary + 4_000 })) as Decision).allowed) admitted++;
    expect(admitted).toBe(2 * LIMIT);
  });
});

/**
 * The traps measured when moving an Express app from express-rate-limit to sluice, on the same
 * traffic through both (express-rate-limit 8.7.4, its MemoryStore; sluice's MemoryStore), with
 * the clock faked (`Date` only). Each trace is a list of `[ms, requests]` bursts.
 */
import { fixedWindow, fromExpressRateLimit, rateLimit } from '@sluice/express';
import express, { type RequestHandler } from 'express';
import { rateLimit as expressRateLimit } from 'express-rate-limit';
import supertest from 'supertest';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

/** 1 min past a whole hour: epoch-aligned windows and first-request windows part here. */
const T0 = Date.UTC(2026, 0, 1, 12, 0, 30);

function app(limiter: RequestHandler) {
  const a = express();
  a.use(limiter);
  a.get('/', (_req, res) => {
    res.send('ok');
  });
  return a;
}

/** The statuses of each burst of a trace, run at its times. */
async function statuses(limiter: RequestHandler, trace: readonly (readonly [number, number])[]) {
  const served = app(limiter);
  const out: number[][] = [];
  for (const [at, count] of trace) {
    vi.setSystemTime(T0 + at);
    const burst: number[] = [];
    for (let i = 0; i < count; i++) burst.push((await supertest(served).get('/')).status);
    out.push(burst);
  }
  return out;
}

const admitted = (bursts: number[][]) => bursts.map((b) => b.filter((s) => s === 200).length);

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(T0);
});
afterEach(() => {
  vi.useRealTimers();
});

const OPTIONS = { windowMs: 60_000, limit: 5 } as const;

describe('fromExpressRateLimit on the same traffic as express-rate-limit', () => {
  it.each([
    ['a burst', [[0, 8]]],
    [
      'a client that waits out its window',
      [
        [0, 5],
        [60_000, 6],
      ],
    ],
    [
      'a refused client that keeps trying inside the window',
      [
        [0, 6],
        [30_000, 3],
        [59_999, 2],
        [60_000, 5],
      ],
    ],
    [
      'one request, then a full window later',
      [
        [0, 1],
        [70_000, 6],
      ],
    ],
  ] as const)('%s: the same statuses', async (_name, trace) => {
    const theirs = await statuses(expressRateLimit(OPTIONS), trace);
    const ours = await statuses(rateLimit(fromExpressRateLimit(OPTIONS)), trace);
    expect(ours).toEqual(theirs);
  });

  it('a client that spends its window at its end: the window opened at its first request', async () => {
    // Both open the window at the first request (0) and reset it at 60 s: 5 + 5 in 2 s.
    const trace = [
      [0, 1],
      [59_000, 4],
      [61_000, 5],
    ] as const;
    expect(admitted(await statuses(expressRateLimit(OPTIONS), trace))).toEqual([1, 4, 5]);
    expect(admitted(await statuses(rateLimit(fromExpressRateLimit(OPTIONS)), trace))).toEqual([1, 4, 5]);
  });

  it('the refusal: status, body and legacy headers as express-rate-limit sends them', async () => {
    const theirs = app(expressRateLimit({ ...OPTIONS, limit: 1 }));
    const ours = app(rateLimit(fromExpressRateLimit({ ...OPTIONS, limit: 1 })));
    await supertest(theirs).get('/');
    await supertest(ours).get('/');
    const [a, b] = [await supertest(theirs).get('/'), await supertest(ours).get('/')];
    expect([b.status, b.text]).toEqual([a.status, a.text]);
    for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after']) {
      expect([name, b.headers[name]]).toEqual([name, a.headers[name]]);
    }
    // An epoch time in seconds, as express-rate-limit sends it.
    expect(b.headers['x-ratelimit-reset']).toBe(String(T0 / 1000 + 60));
  });

  it('refuses what it would ignore or fail on with a coded error naming the option', () => {
    expect(() => fromExpressRateLimit({ ...OPTIONS, onLimitReached: () => {} } as never)).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_UNSUPPORTED', option: 'onLimitReached' }),
    );
    expect(() => fromExpressRateLimit({ windowMs: 0 })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', option: 'windowMs' }),
    );
  });
});

describe('the traps of moving by hand', () => {
  it("fixedWindow is aligned to the epoch: a client's first window ends at the next whole minute", async () => {
    // Both start at 12:00:30. express-rate-limit's window runs to 12:01:30; fixedWindow's to 12:01:00.
    const trace = [
      [0, 5],
      [31_000, 5],
    ] as const;
    expect(admitted(await statuses(expressRateLimit(OPTIONS), trace))).toEqual([5, 0]);
    const ours = rateLimit({ algorithm: fixedWindow({ limit: 5, window: '1m' }) });
    expect(admitted(await statuses(ours, trace))).toEqual([5, 5]);
  });

  it('the default headers differ: X-RateLimit-* there, IETF RateLimit here', async () => {
    const theirs = await supertest(app(expressRateLimit(OPTIONS))).get('/');
    const ours = await supertest(app(rateLimit({ algorithm: fixedWindow({ limit: 5, window: '1m' }) }))).get(
      '/',
    );
    expect(theirs.headers['x-ratelimit-limit']).toBe('5');
    expect(theirs.headers.ratelimit).toBeUndefined();
    expect(ours.headers['x-ratelimit-limit']).toBeUndefined();
    expect(ours.headers.ratelimit).toBe('"fixed-window";r=4;t=30');
  });
});

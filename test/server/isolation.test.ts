import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawClient, startServer, type TestServer, until } from './harness.js';

/**
 * Issue 23, section 1: one client's bad input must not touch another client's writes, nor its
 * own connection's other commands, nor make another client wait without bound.
 */

const T0 = 1_800_000_000_000;
const MAX_KEY = 1900;
const LONG = 'a'.repeat(2000);

/** RESP for one command (what a client writes). */
function command(...args: string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
}

function info(text: string, field: string): number {
  return Number(new RegExp(`^${field}:(\\d+)`, 'm').exec(text)?.[1]);
}

for (const durability of ['commit', 'flush'] as const) {
  describe(`keys longer than the stored maximum (durability ${durability})`, () => {
    let t: TestServer;
    let client: Redis;
    beforeAll(async () => {
      t = await startServer({ durability });
      client = await t.client();
    });
    afterAll(() => t.stop());

    it('a long key sent in the same write as a good one fails alone: the good one is answered and stored (1.1)', async () => {
      const raw = rawClient(t.port);
      raw.socket.write(
        command('RL.REDUCE', 'good', '10', '60') +
          command('RL.REDUCE', LONG, '10', '60') +
          command('RL.GET', 'good', '10', '60'),
      );
      await until(() => raw.received().split('\r\n').length >= 4, 'three replies');
      expect(raw.received()).toBe(
        `:10\r\n-ERR_SLUICE_INVALID_KEY key must be at most ${MAX_KEY} bytes; got 2000\r\n:9\r\n`,
      );
      raw.socket.destroy();
    });

    it('40 clients beside one sending long keys: every one of their 800 writes is answered and stored (1.1)', async () => {
      const bad = await t.client();
      let stop = false;
      const badLoop = (async () => {
        let errors = 0;
        while (!stop) {
          const pipeline = bad.pipeline();
          for (let i = 0; i < 8; i++) pipeline.call('RL.PREDUCE', `${LONG}${i}`, '10', '60000', 'AT', '0');
          for (const [err] of (await pipeline.exec())!) if (err !== null) errors++;
        }
        return errors;
      })();
      const clients = await Promise.all(Array.from({ length: 40 }, () => t.client()));
      const replies = await Promise.all(
        clients.map(async (c, n) => {
          const mine: unknown[] = [];
          for (let i = 0; i < 20; i++) {
            mine.push(await c.call('RL.PREDUCE', `crowd:${n}`, '100', '60000', 'AT', '0').catch((e) => e));
          }
          return mine;
        }),
      );
      stop = true;
      expect(await badLoop).toBeGreaterThan(0);
      for (const [n, mine] of replies.entries()) {
        expect(mine, `client ${n}`).toEqual(Array.from({ length: 20 }, (_, i) => 100 - i));
        expect(await client.call('RL.PGET', `crowd:${n}`, '100', '60000', 'AT', '0')).toBe(80);
      }
    });

    it(`a key of ${MAX_KEY} bytes is accepted; a longer one (up to the frame limit) gets a coded error for that command and the connection carries on (1.2)`, async () => {
      expect(await client.call('RL.PREDUCE', 'k'.repeat(MAX_KEY), '2', '1000', 'AT', '0')).toBe(2);
      for (const length of [MAX_KEY + 1, 1979, 4096, 5000, 100_000]) {
        const key = 'k'.repeat(length);
        const pipeline = client.pipeline();
        pipeline.call('RL.PREDUCE', key, '2', '1000', 'AT', '0');
        pipeline.call('SL.CHECK', 'LIMIT', 'gcra:rate=1,period=1s', key);
        pipeline.call('SL.LEASE', 'ACQUIRE', 'space', key, 'id', '1', '1000', '100', 'p');
        pipeline.ping();
        const results = (await pipeline.exec())!;
        const expected = `ERR_SLUICE_INVALID_KEY key must be at most ${MAX_KEY} bytes; got ${length}`;
        expect(results.map(([err, value]) => err?.message ?? value)).toEqual([
          expected,
          expected,
          expected,
          'PONG',
        ]);
      }
      expect(t.events.filter((e) => e.event === 'internal-error')).toEqual([]);
    });
  });
}

describe('one key costs bounded work (1.4)', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startServer({ maxLogEntries: 1000 });
  });
  afterAll(() => t.stop());

  it("a sliding window log whose limit is over the server's cap is refused with a coded error naming it", async () => {
    const client = await t.client();
    for (const limit of ['1001', '1000000']) {
      await expect(
        client.call('SL.CHECK', 'LIMIT', `sliding-window-log:limit=${limit},window=1m`, 'k'),
      ).rejects.toThrow(
        new RegExp(
          `^ERR_SLUICE_INVALID_OPTION sliding-window-log limit must be at most 1000 on this server \\(maxLogEntries\\).*; got ${limit}`,
        ),
      );
    }
    expect(
      await client.call('SL.CHECK', 'COMPACT', 'LIMIT', 'sliding-window-log:limit=1000,window=1m', 'k'),
    ).toEqual([0, 999, 60_000, 0, 0]);
  });

  it('the default cap is 10,000 entries', async () => {
    const d = await startServer();
    try {
      const client = await d.client();
      await expect(
        client.call('SL.CHECK', 'LIMIT', 'sliding-window-log:limit=10001,window=1m', 'k'),
      ).rejects.toThrow(/^ERR_SLUICE_INVALID_OPTION sliding-window-log limit must be at most 10000/);
      expect(
        await client.call('SL.CHECK', 'COMPACT', 'LIMIT', 'sliding-window-log:limit=10000,window=1m', 'k'),
      ).toEqual([0, 9999, 60_000, 0, 0]);
    } finally {
      await d.stop();
    }
  });

  it('a client pipelining checks of an expensive key runs a bounded number of commands per turn, and another client is served in between', async () => {
    const hammer = await t.client();
    const good = await t.client();
    const spec = 'sliding-window-log:limit=1000,window=1h';
    // 20,000 checks, each a distinct millisecond: the log fills to the cap, and every check reads it.
    const pipeline = hammer.pipeline();
    for (let i = 0; i < 20_000; i++)
      pipeline.call('SL.CHECK', 'AT', String(T0 + i), 'COMPACT', 'LIMIT', spec, 'hot');
    const started = performance.now();
    let hammerDone = false;
    const hammered = pipeline.exec().then((results) => {
      hammerDone = true;
      return { results: results!, ms: performance.now() - started };
    });
    const latencies: number[] = [];
    while (!hammerDone) {
      const sent = performance.now();
      await good.call('RL.PREDUCE', 'calm', '1000000', '60000', 'AT', '0');
      if (!hammerDone) latencies.push(performance.now() - sent);
    }
    const { results, ms } = await hammered;
    expect(results.filter(([err]) => err !== null)).toEqual([]);
    // The deterministic bound: the server never ran more than its per-turn budget for one
    // connection before reading the others (INFO reports the largest turn it ran).
    const stats = (await good.info('stats')) as string;
    expect(info(stats, 'max_commands_per_turn')).toBeGreaterThan(0);
    expect(info(stats, 'max_commands_per_turn')).toBeLessThanOrEqual(256);
    // What it means for the calm client: served throughout (before the per-turn budget it was
    // served once, after the whole hammer), its typical wait a small share of the hammer's time (a
    // ratio of the hammer's own time, so a loaded machine slows both alike). One probe may wait
    // longer: a pause of the test process itself (GC, the scheduler on a loaded machine) lands on
    // whichever probe is in flight; a full local run saw one wait 353 ms of a 1,393 ms hammer, 5 ms past a
    // quarter.
    expect(latencies.length).toBeGreaterThanOrEqual(5);
    const sorted = [...latencies].sort((a, b) => a - b);
    expect(sorted[Math.floor(sorted.length / 2)]!).toBeLessThan(ms / 10);
    expect(latencies.filter((latency) => latency >= ms / 4).length).toBeLessThanOrEqual(1);
  });
});

describe("times past core's limit are refused (1.5)", () => {
  let t: TestServer;
  let client: Redis;
  beforeAll(async () => {
    t = await startServer();
    client = await t.client();
  });
  afterAll(() => t.stop());

  it('SL.* AT past 2^42 ms gets ERR_SLUICE_INVALID_TIME, as core gives it; 2^42 itself is accepted', async () => {
    for (const at of ['99999999999999999', String(2 ** 42 + 1), '1e300']) {
      for (const name of ['SL.CHECK', 'SL.PEEK', 'SL.REFUND', 'SL.CHARGE']) {
        await expect(
          client.call(name, 'AT', at, 'LIMIT', 'gcra:rate=1,period=1s', 'k'),
          `${name} AT ${at}`,
        ).rejects.toThrow(/^ERR_SLUICE_INVALID_TIME now must be ms since the epoch, from 0 to 4398046511104/);
      }
      await expect(
        client.call('SL.LEASE', 'ACQUIRE', 's', 'k', 'id', '1', '1000', '100', 'p', 'AT', at),
      ).rejects.toThrow(/^ERR_SLUICE_INVALID_TIME/);
    }
    expect(
      await client.call('SL.CHECK', 'AT', String(2 ** 42), 'COMPACT', 'LIMIT', 'gcra:rate=1,period=1s', 'k'),
    ).toEqual([0, 0, 1000, 0, 0]);
  });

  it("RL.* AT past 2^42 ms is out of range, in Smyte's words", async () => {
    await expect(client.call('RL.PREDUCE', 'k', '2', '1000', 'AT', String(2 ** 42 + 1))).rejects.toThrow(
      'Value is not an integer or out of range',
    );
    await expect(client.call('RL.REDUCE', 'k', '2', '1', 'AT', String(2 ** 42 / 1000 + 1))).rejects.toThrow(
      'Value is not an integer or out of range',
    );
    expect(await client.call('RL.PREDUCE', 'k', '2', '1000', 'AT', String(2 ** 42))).toBe(2);
  });
});

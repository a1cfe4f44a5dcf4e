/**
 * The Hono adapter on a real runtime, over real HTTP (issue 25 §2, issue 27): the README's example
 * as written limits by the default client address, and the adapter's behaviour checks (headers,
 * the problem body, a concurrency lease given back after the handler) hold, on the memory store.
 */

import { randomUUID } from 'node:crypto';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type Runtime, type RuntimeApp, serveOnRuntime, WITH_TCP } from './harness.js';

interface Reply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly body: string;
}

/** Two clients, by address (loopback addresses are all this machine's). */
const A = '127.0.0.1';
const B = '127.0.0.2';

/** How long a runtime may take to start (a stale build is built first): generous, no verdict. */
const START_MS = 240_000;

/**
 * A GET from client `from`. On Bun and Deno the connection comes from that address. On workerd
 * (Workers) the address is what Cloudflare's edge puts in CF-Connecting-IP, so the request
 * carries it there as the edge would; with `from: null`, no address at all.
 */
function get(
  app: RuntimeApp,
  runtime: Runtime,
  path: string,
  from: string | null = A,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const edge = runtime === 'workerd' && from !== null ? { 'cf-connecting-ip': from } : {};
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: app.port,
        path,
        agent: false,
        ...(runtime !== 'workerd' && from !== null ? { localAddress: from } : {}),
        headers: { ...headers, ...edge },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => {
          const flat: Record<string, string | undefined> = {};
          for (const [name, value] of Object.entries(res.headers)) {
            flat[name] = Array.isArray(value) ? value.join(', ') : value;
          }
          resolve({ status: res.statusCode!, headers: flat, body });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * The README's example counts in a fixed window of one minute on the real clock: five requests
 * sent more than 10 s before the minute turns all fall in one window. (A margin, not a verdict: the
 * five take milliseconds.)
 */
async function clearOfMinuteTurn(): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 10_000) await new Promise((resolve) => setTimeout(resolve, left + 250));
}

export function describeRuntime(runtime: Runtime): void {
  describe(`@sluice/hono on ${runtime} (the built package, over HTTP)`, () => {
    let app!: RuntimeApp;
    const prefix = `runtime-${runtime}-${randomUUID()}:`;
    const send = (path: string, from?: string | null, headers?: Record<string, string>) =>
      get(app, runtime, path, from, headers);

    beforeAll(async () => {
      app = await serveOnRuntime(runtime, { port: inject('redisPort'), prefix });
    }, START_MS);
    afterAll(async () => {
      await app?.stop();
    });

    it("the README's example as written limits by the default client address: 3 of 5, then 429 with Retry-After (issue 27)", async () => {
      await clearOfMinuteTurn();
      const replies: Reply[] = [];
      for (let i = 0; i < 5; i++) {
        // Off Workers a client's own CF-Connecting-IP is never believed: each claims another address.
        const forged = runtime === 'workerd' ? {} : { 'cf-connecting-ip': `198.51.100.${i + 1}` };
        replies.push(await send('/', A, forged));
      }
      expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 429, 429]);
      expect(replies.slice(0, 3).map((r) => r.headers.ratelimit?.replace(/;t=\d+$/, ''))).toEqual([
        '"burst";r=2',
        '"burst";r=1',
        '"burst";r=0',
      ]);
      for (const refused of replies.slice(3)) {
        const retryAfter = Number(refused.headers['retry-after']);
        expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
      }
      // Another client has a quota of its own.
      const other = await send('/', B);
      expect([other.status, other.headers.ratelimit?.replace(/;t=\d+$/, '')]).toEqual([200, '"burst";r=2']);
    }, 60_000); // up to 10 s of it waiting for the minute to turn

    it('sets the RateLimit headers, gives the handler its Decision, and refuses with the problem body', async () => {
      const first = await send('/checks/limited');
      expect([first.status, first.headers.ratelimit, first.headers['ratelimit-policy'], first.body]).toEqual([
        200,
        '"checks";r=1;t=10',
        '"checks";q=2;w=10',
        '{"remaining":1}',
      ]);
      expect((await send('/checks/limited')).body).toBe('{"remaining":0}');
      const refused = await send('/checks/limited');
      expect([refused.status, refused.headers['retry-after'], refused.headers.ratelimit]).toEqual([
        429,
        '10',
        '"checks";r=0;t=10',
      ]);
      expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(refused.body)).toMatchObject({
        type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
        status: 429,
        'violated-policies': ['checks'],
      });
      expect((await send('/checks/limited', B)).status).toBe(200);
    });

    it('rateLimit() with no options limits by the default address (100 a minute)', async () => {
      const reply = await send('/checks/default');
      expect([reply.status, reply.headers.ratelimit?.replace(/;t=\d+$/, '')]).toEqual([
        200,
        '"default";r=99',
      ]);
      expect(reply.headers['ratelimit-policy']).toBe('"default";q=100;w=60');
    });

    it('holds a concurrency lease while the handler runs and gives it back once it has returned', async () => {
      // The held handler fetches this gate, which answers when the test opens it.
      let entered!: () => void;
      const inHandler = new Promise<void>((resolve) => {
        entered = resolve;
      });
      let open!: () => void;
      const opened = new Promise<void>((resolve) => {
        open = resolve;
      });
      const gate = createServer((_req, res) => {
        entered();
        void opened.then(() => res.end('open'));
      });
      await new Promise<void>((resolve) => gate.listen(0, '127.0.0.1', resolve));
      try {
        const url = `http://127.0.0.1:${(gate.address() as AddressInfo).port}/`;
        const held = send(`/checks/lease/hold?gate=${encodeURIComponent(url)}`);
        held.catch(() => {}); // awaited below; a failing check before then must not leave it unhandled
        await inHandler;
        const refused = await send('/checks/lease/quick');
        expect([refused.status, refused.headers['retry-after']]).toEqual([429, '1']);
        expect((await send('/checks/lease/quick', B)).status).toBe(200);
        open();
        expect(await held, app.output()).toMatchObject({ status: 200, body: 'held' });
        for (let i = 0; i < 3; i++) expect((await send('/checks/lease/quick')).status).toBe(200);
      } finally {
        open();
        gate.closeAllConnections();
        await new Promise((resolve) => gate.close(resolve));
      }
    });

    it('allows only the event-loop signals that measure on this runtime; the others are refused with a code', async () => {
      // Bun: no eventLoopUtilization, a working monitorEventLoopDelay. Deno: neither (its delay
      // histogram records nothing). Workers: neither (a utilization that always answers 0).
      const expected = {
        bun: { utilization: 'ERR_SLUICE_UNSUPPORTED', delay: 1 },
        deno: { utilization: 'ERR_SLUICE_UNSUPPORTED', delay: 'ERR_SLUICE_UNSUPPORTED' },
        workerd: { utilization: 'ERR_SLUICE_UNSUPPORTED', delay: 'ERR_SLUICE_UNSUPPORTED' },
      }[runtime];
      expect(JSON.parse((await send('/checks/signals')).body)).toEqual(expected);
    });

    if (WITH_TCP.includes(runtime)) {
      it("limits on RedisStore through the runtime's own TCP (ioredis), the state in Redis", async () => {
        const replies = [
          await send('/redis/limited'),
          await send('/redis/limited'),
          await send('/redis/limited'),
        ];
        expect(replies.map((r) => [r.status, r.headers.ratelimit?.replace(/;t=\d+$/, '')])).toEqual([
          [200, '"redis";r=1'],
          [200, '"redis";r=0'],
          [429, '"redis";r=0'],
        ]);
        expect((await send('/redis/limited', B)).status).toBe(200);
        // Decided in Redis, not by a failure policy's local answer: the two clients' states are there.
        const redis = new Redis({ port: inject('redisPort'), lazyConnect: true });
        try {
          await redis.connect();
          expect((await redis.keys(`${prefix}*`)).sort()).toEqual([
            expect.stringContaining(`{ip:${A}}`),
            expect.stringContaining(`{ip:${B}}`),
          ]);
        } finally {
          redis.disconnect();
        }
      });
    }

    if (runtime === 'workerd') {
      it('without CF-Connecting-IP (workerd outside Cloudflare) nothing is limited, and SLUICE_NO_CLIENT_ADDRESS is said once', async () => {
        for (let i = 0; i < 3; i++) {
          const reply = await send('/checks/limited', null);
          expect([reply.status, reply.headers.ratelimit]).toEqual([200, undefined]);
        }
        expect(JSON.parse((await send('/checks/warnings')).body)).toEqual(['SLUICE_NO_CLIENT_ADDRESS']);
      });
    } else {
      it('finds every address itself: no configuration warning, from either app', async () => {
        expect(JSON.parse((await send('/checks/warnings')).body)).toEqual([]);
        // The README's app warns with the default onWarning: console.warn, "[CODE] message".
        expect(app.output()).not.toMatch(/\[SLUICE_/);
      });
    }
  });
}

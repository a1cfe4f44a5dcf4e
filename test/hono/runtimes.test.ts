import { concurrencyLimit, fixedWindow, MemoryStore, rateLimit } from '@sluice/hono';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { forgetWarnings } from '../setup/process-warnings.js';

// Hono without @hono/node-server: no Node response under the Context, as on Bun, Deno and Workers.
// `app.request()` runs the app in process with no bindings. (The real runtimes: test/hono/runtimes/.)
describe('@sluice/hono without @hono/node-server', () => {
  it('gives a lease back once the handlers after it have returned', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const app = new Hono();
    app.use(concurrencyLimit({ limit: 1, key: () => 'everyone' }));
    app.get('/slow', async (c) => {
      await gate;
      return c.text('slow');
    });
    app.get('/', (c) => c.text('ok'));
    const slow = app.request('/slow');
    // The slow request holds the only lease while its handler waits.
    const refused = await app.request('/');
    expect([refused.status, refused.headers.get('retry-after')]).toEqual([429, '1']);
    open();
    expect((await slow).status).toBe(200);
    // Released after the slow handler returned: without it, every later request would be refused.
    for (let i = 0; i < 3; i++) expect((await app.request('/')).status).toBe(200);
  });

  it('byIp() finds no address without a socket (app.request() on Node): the limit is skipped, SLUICE_NO_CLIENT_ADDRESS said once, a client-sent CF-Connecting-IP not believed off Workers; `address` supplies it', async () => {
    forgetWarnings();
    const unaddressed: string[] = [];
    const unlimited = new Hono();
    unlimited.use(
      rateLimit({
        name: 'ip',
        algorithm: fixedWindow({ limit: 1, window: '10s' }),
        onWarning: (warning) => unaddressed.push(warning.code),
      }),
    );
    unlimited.get('/', (c) => c.text('ok'));
    for (let i = 0; i < 2; i++) {
      // Only Cloudflare's edge sets this header; on Node any client can send it.
      const reply = await unlimited.request('/', { headers: { 'cf-connecting-ip': '203.0.113.1' } });
      expect([reply.status, reply.headers.get('ratelimit')]).toEqual([200, null]);
    }
    expect(unaddressed).toEqual(['SLUICE_NO_CLIENT_ADDRESS']);
    const warnings: string[] = [];
    const limited = new Hono();
    limited.use(
      rateLimit({
        name: 'ip',
        algorithm: fixedWindow({ limit: 1, window: '10s' }),
        store: new MemoryStore({ clock: () => 0 }),
        address: (c) => c.req.header('cf-connecting-ip'),
        onWarning: (warning) => warnings.push(warning.code),
      }),
    );
    limited.get('/', (c) => c.text('ok'));
    const from = (ip: string) => limited.request('/', { headers: { 'cf-connecting-ip': ip } });
    expect((await from('203.0.113.1')).headers.get('ratelimit')).toBe('"ip";r=0;t=10');
    expect((await from('203.0.113.1')).status).toBe(429);
    expect((await from('203.0.113.2')).status).toBe(200);
    expect(warnings).toEqual([]);
  });

  it('rejects a bad address, proxyTrust or handler at creation', () => {
    const algorithm = fixedWindow({ limit: 1, window: '10s' });
    expect(() => rateLimit({ algorithm, address: 'x-real-ip' as never })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION' }),
    );
    expect(() => rateLimit({ algorithm, handler: 'problem' as never })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION', option: 'handler' }),
    );
    expect(() => rateLimit({ algorithm, proxyTrust: 'yes' as never })).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_INVALID_OPTION' }),
    );
  });

  describe("on Deno, the request's signal is read only once a request has waited (issue 37.6)", () => {
    // Reading a served request's `signal` makes Deno print its legacy-abort deprecation warning
    // for the app: an app on the in-memory default must never read it; one whose store answers
    // later must still notice a client that left meanwhile.
    const deno = globalThis as { Deno?: unknown };
    const request = (reads: { n: number }, signal: AbortSignal) => {
      const r = new Request('http://localhost/');
      Object.defineProperty(r, 'signal', {
        get() {
          reads.n++;
          return signal;
        },
      });
      return r;
    };
    const app = (store: ConstructorParameters<typeof MemoryStore>[0] | 'async', handled: string[]) => {
      const memory = new MemoryStore(store === 'async' ? {} : store);
      // The same store, answering on a later turn (as a remote store does).
      const later = Object.create(memory, {
        consume: {
          value: (...args: Parameters<MemoryStore['consume']>) => Promise.resolve(memory.consume(...args)),
        },
      }) as MemoryStore;
      const hono = new Hono();
      hono.use(
        rateLimit({
          name: 'w',
          key: () => 'k',
          algorithm: fixedWindow({ limit: 5, window: '1m' }),
          store: store === 'async' ? later : memory,
        }),
      );
      hono.get('/', (c) => {
        handled.push('/');
        return c.text('ok');
      });
      return hono;
    };

    it('a synchronous store (the default): the signal is never read', async () => {
      deno.Deno = {};
      try {
        const handled: string[] = [];
        const hono = app({}, handled);
        const reads = { n: 0 };
        expect((await hono.fetch(request(reads, new AbortController().signal))).status).toBe(200);
        expect(reads.n).toBe(0);
        expect(handled).toEqual(['/']);
      } finally {
        delete deno.Deno;
      }
    });

    it('an asynchronous store: a client that left while it answered is still noticed (the handler never runs)', async () => {
      deno.Deno = {};
      try {
        const handled: string[] = [];
        const hono = app('async', handled);
        const reads = { n: 0 };
        const controller = new AbortController();
        const answer = hono.fetch(request(reads, controller.signal));
        controller.abort();
        await answer;
        expect(reads.n).toBeGreaterThan(0);
        expect(handled).toEqual([]);
      } finally {
        delete deno.Deno;
      }
    });

    it('off Deno (Bun, Workers): read as the request arrives, as before', async () => {
      const handled: string[] = [];
      const hono = app({}, handled);
      const reads = { n: 0 };
      const controller = new AbortController();
      controller.abort();
      await hono.fetch(request(reads, controller.signal));
      expect(reads.n).toBeGreaterThan(0);
      expect(handled).toEqual([]);
    });
  });
});

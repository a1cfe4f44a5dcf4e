/**
 * Hostile and bad input: a flood of unique addresses against the memory store, IPv6 rotation
 * within one /56, X-Forwarded-For spoofing, huge and malformed headers, odd bytes in tokens, and
 * keys that try to break out of their Redis hash tag.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import type { Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  byIp,
  byToken,
  type Decision,
  fixedWindow,
  Limiter,
  MemoryStore,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import { bindName } from '@sluice/core/adapter';
import { rateLimit } from '@sluice/express';
import { sluice } from '@sluice/fastify';
import { RedisStore, type RedisStoreErrorEvent } from '@sluice/redis';
import express from 'express';
import Fastify, { type FastifyHttpOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cluster, Redis } from '../redis/client-family.js';
import { connectCluster, connectRedis, uniquePrefix } from '../redis/clients.js';
import { nodeScript } from '../setup/node-script.js';
import { get, writeResults } from './helpers.js';

const run = promisify(execFile);
const FLOOD_RUNNER = fileURLToPath(new URL('./flood-runner.ts', import.meta.url));

describe('a flood of 1,000,000 unique client addresses on the memory store', () => {
  const REQUESTS = 1_000_000;
  const MAX_KEYS = 100_000;
  interface Flood {
    answered: number;
    admitted: number;
    maxKeyCount: number;
    attackerRequests: number;
    attackerAdmitted: number;
    errors: string[];
    ms: number;
    baseline: number;
    samples: { requests: number; keys: number; heapUsed: number }[];
  }
  let flood: Flood;

  beforeAll(async () => {
    // Its own process: --expose-gc for honest heap figures, and no other test's garbage.
    const { stdout } = await run(
      process.execPath,
      ['--expose-gc', await nodeScript(FLOOD_RUNNER), String(REQUESTS), String(MAX_KEYS)],
      // A bound that only turns a hang into a failure: ~10 s on an idle 2-core machine, and it
      // outlasted 90 s at load 11 (the flood is CPU-bound, a few seconds of CPU).
      { timeout: 600_000, maxBuffer: 1 << 20 },
    );
    flood = JSON.parse(stdout) as Flood;
    const peak = Math.max(...flood.samples.map((s) => s.heapUsed));
    writeResults('flood', {
      ...flood,
      peakHeapUsedMB: Math.round(peak / 1e5) / 10,
      growthOverBaselineMB: Math.round((peak - flood.baseline) / 1e5) / 10,
      bytesPerKey: Math.round((peak - flood.baseline) / MAX_KEYS),
    });
  }, 660_000);

  it('keeps answering every request, with no error', () => {
    expect(flood.answered).toBe(REQUESTS);
    // Each address is new: each is admitted (its own fresh limit).
    expect(flood.admitted).toBe(REQUESTS);
    expect(flood.errors).toEqual([]);
  });

  it('never holds more than maxKeys keys', () => {
    expect(flood.maxKeyCount).toBe(MAX_KEYS);
  });

  it('heap stays bounded: flat once the store is full, a few hundred bytes per key', () => {
    const full = flood.samples.filter((s) => s.requests >= 2 * MAX_KEYS).map((s) => s.heapUsed);
    expect(full.length).toBeGreaterThan(5);
    // From 200k to 1M addresses the heap never rises more than 4 MB (noise) above its level at
    // 200k, while 800k more keys came. It may fall by more: since the store keeps byte counts
    // (maxBytes), the heap after GC ends 0-6 MB below its level at 200k, varying from run to run
    // (cause not established); a fall is no leak, and the bound below still holds.
    expect(Math.max(...full) - full[0]!).toBeLessThan(4e6);
    // Whole store: under 512 bytes per key held (measured ≈ 270 with a fixed window).
    expect(Math.max(...full) - flood.baseline).toBeLessThan(512 * MAX_KEYS);
  });

  it('a limited client mixed into the flood is never forgotten: it gets its limit once, not once per maxKeys new addresses', () => {
    // Regression: refused requests did not count as use, so the refused key aged out under the
    // flood and the attacker got its 10 again each time MAX_KEYS new addresses had arrived
    // (100 admissions over the run). A refusal now keeps the key in the young generation.
    expect(flood.attackerRequests).toBeGreaterThan(100);
    expect(flood.attackerAdmitted).toBe(10);
  });
});

// --- Real HTTP: Express and Fastify -------------------------------------------------------------

interface HttpApp {
  port: number;
  store: MemoryStore;
  close(): Promise<void>;
}

const LIMIT = 5;
const window = fixedWindow({ limit: LIMIT, window: '1d' });

/**
 * `trusted`: the app trusts exactly one proxy hop in front of it (Express `trust proxy` = 1;
 * Fastify, which ignores hop counts since 5.x (`trustProxy: 1` trusts nothing), the loopback
 * address of that proxy).
 */
async function expressApp(trusted: boolean, key = byIp()): Promise<HttpApp> {
  const store = new MemoryStore();
  const app = express();
  if (trusted) app.set('trust proxy', 1);
  app.use(rateLimit({ name: 'per-ip', key, algorithm: window, store, onWarning: () => {} }));
  app.get('/', (_req, res) => {
    res.json({ ok: true });
  });
  const server: Server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    store,
    close: async () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

async function fastifyApp(trusted: boolean | 1, key = byIp()): Promise<HttpApp> {
  const store = new MemoryStore();
  const options: FastifyHttpOptions<Server> = {};
  // Fastify 5's types no longer accept a hop count; at run time it trusts nothing.
  if (trusted !== false) options.trustProxy = trusted === 1 ? (1 as unknown as boolean) : '127.0.0.1';
  const app = Fastify(options);
  await app.register(sluice, { name: 'per-ip', key, algorithm: window, store, onWarning: () => {} });
  app.get('/', async () => ({ ok: true }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { port: (app.server.address() as AddressInfo).port, store, close: () => app.close() };
}

const ADAPTERS = { express: expressApp, fastify: fastifyApp };

async function statuses(port: number, headers: Record<string, string>[]): Promise<number[]> {
  const out: number[] = [];
  for (const h of headers) out.push((await get(port, '/', h)).status);
  return out;
}

for (const [adapter, build] of Object.entries(ADAPTERS)) {
  describe(`${adapter}: client addresses`, () => {
    it('rotating IPv6 addresses within one /56 share one limit; the next /56 has its own', async () => {
      const app = await build(true);
      try {
        // 40 different addresses of 2001:db8:1:ab00::/56, as the one trusted proxy reports them.
        const rotating = Array.from({ length: 40 }, (_, i) => ({
          'x-forwarded-for': `2001:db8:1:ab${(i % 256).toString(16).padStart(2, '0')}:${i.toString(16)}::${((i * 7919) % 65_536).toString(16)}`,
        }));
        const answers = await statuses(app.port, rotating);
        expect(answers.filter((s) => s === 200)).toHaveLength(LIMIT);
        expect(answers.filter((s) => s === 429)).toHaveLength(40 - LIMIT);
        expect(app.store.inspect(bindName(window, 'per-ip'), 'ip:2001:db8:1:ab00::/56')).toBeDefined();
        expect(await statuses(app.port, [{ 'x-forwarded-for': '2001:db8:1:ac00::1' }])).toEqual([200]);
      } finally {
        await app.close();
      }
    });

    it('without a trusted proxy, X-Forwarded-For changes nothing: the socket address is the key', async () => {
      const app = await build(false);
      try {
        const spoofed = Array.from({ length: 20 }, (_, i) => ({
          'x-forwarded-for': `198.51.100.${i}, 203.0.113.${i}`,
        }));
        const answers = await statuses(app.port, spoofed);
        expect(answers.filter((s) => s === 200)).toHaveLength(LIMIT);
        expect(app.store.keyCount).toBe(1);
        expect(app.store.inspect(bindName(window, 'per-ip'), 'ip:127.0.0.1')).toEqual([
          LIMIT,
          expect.any(Number),
        ]);
      } finally {
        await app.close();
      }
    });

    it('with one trusted hop, only the address that hop saw is used; spoofed entries before it are ignored', async () => {
      const app = await build(true);
      try {
        const spoofed = Array.from({ length: 20 }, (_, i) => ({
          'x-forwarded-for': `10.0.0.${i}, 198.51.100.${i}, 192.0.2.77`,
        }));
        const answers = await statuses(app.port, spoofed);
        expect(answers.filter((s) => s === 200)).toHaveLength(LIMIT);
        expect(app.store.keyCount).toBe(1);
        expect(app.store.inspect(bindName(window, 'per-ip'), 'ip:192.0.2.77')).toEqual([
          LIMIT,
          expect.any(Number),
        ]);
      } finally {
        await app.close();
      }
    });

    it('malformed X-Forwarded-For from the trusted hop, huge and odd headers: answered, never a 5xx, no crash', async () => {
      const app = await build(true);
      try {
        const odd = [
          { 'x-forwarded-for': 'not an address' },
          { 'x-forwarded-for': ',,,' },
          { 'x-forwarded-for': '::::::::' },
          { 'x-forwarded-for': '999.999.999.999' },
          { 'x-forwarded-for': `${'1.2.3.4, '.repeat(1000)}5.6.7.8` },
          { 'x-forwarded-for': 'fe80::1%eth0' },
          { 'x-forwarded-for': '\u00ff\u00fe' },
          { 'x-big': 'a'.repeat(12_000) },
        ];
        for (const headers of odd) {
          const { status } = await get(app.port, '/', headers);
          expect([200, 429], JSON.stringify(headers).slice(0, 60)).toContain(status);
        }
        // Above Node's 16 KB header limit: Node refuses it (431) before the app runs.
        expect((await get(app.port, '/', { 'x-big': 'a'.repeat(20_000) })).status).toBe(431);
        // NUL and a bare CR in a header, sent raw: the parser refuses them (400); the server lives on.
        for (const bad of ['x-evil: a\u0000b', 'x-evil: a\rb']) {
          const socket = connect((await Promise.resolve(app.port)) as number, '127.0.0.1');
          socket.write(`GET / HTTP/1.1\r\nHost: x\r\n${bad}\r\n\r\n`);
          const [chunk] = (await once(socket, 'data')) as [Buffer];
          socket.destroy();
          expect(chunk.toString().slice(0, 12)).toBe('HTTP/1.1 400');
        }
        expect((await get(app.port, '/', { 'x-forwarded-for': '192.0.2.1' })).status).toBe(200);
      } finally {
        await app.close();
      }
    });

    it('tokens with odd bytes are hashed: distinct tokens never share a limit, equal ones always do', async () => {
      const app = await build(false, byToken());
      try {
        // Leading and trailing spaces are not part of an HTTP header value ('abc ' is 'abc').
        const tokens = [
          'abc',
          'a bc',
          'a\tbc',
          'ab\u00ffc',
          'ab\u00fec',
          '{abc}',
          'abc}{',
          'a'.repeat(8_000),
        ];
        for (const token of tokens) {
          const answers = await statuses(
            app.port,
            Array.from({ length: LIMIT + 1 }, () => ({ authorization: `Bearer ${token}` })),
          );
          expect(answers, JSON.stringify(token).slice(0, 20)).toEqual([...Array(LIMIT).fill(200), 429]);
        }
        expect(app.store.keyCount).toBe(tokens.length);
      } finally {
        await app.close();
      }
    });
  });
}

describe('fastify: trustProxy as a hop count', () => {
  it('trustProxy: 1 trusts no proxy in Fastify 5 (it fails closed): X-Forwarded-For is ignored', async () => {
    const app = await fastifyApp(1);
    try {
      const answers = await statuses(
        app.port,
        Array.from({ length: 10 }, (_, i) => ({ 'x-forwarded-for': `198.51.100.${i}` })),
      );
      expect(answers.filter((s) => s === 200)).toHaveLength(LIMIT);
      expect(app.store.inspect(bindName(window, 'per-ip'), 'ip:127.0.0.1')).toEqual([
        LIMIT,
        expect.any(Number),
      ]);
    } finally {
      await app.close();
    }
  });
});

// --- Keys on Redis ------------------------------------------------------------------------------

/** Keys that try to escape the hash tag, inject commands, or collide once escaped. */
const ODD_KEYS = [
  'plain',
  '{',
  '}',
  '{}',
  '}{',
  'a{b}c',
  'a\\(b',
  'a\\\\(b',
  'a\\)b',
  '\\',
  '\\\\',
  'line\nbreak',
  'cr\rlf\r\n',
  'nul\u0000byte',
  'nul\u0000',
  '\u0000',
  'tab\there',
  'ünïcödé',
  '日本語',
  '🦀',
  '\ud800',
  '\udc00',
  '\ud800\udc00',
  ' ',
  'EVAL "return 1" 0',
  '*1\r\n$4\r\nPING\r\n',
  'x'.repeat(4_000),
];

const clients = { standalone: connectRedis, cluster: connectCluster };

for (const [topology, connectTo] of Object.entries(clients)) {
  describe(`odd keys on Redis ${topology}`, () => {
    let client: Redis | Cluster;
    const prefix = uniquePrefix('hostile');
    const errors: RedisStoreErrorEvent[] = [];
    beforeAll(async () => {
      client = await connectTo();
    });
    afterAll(() => {
      client.disconnect();
    });

    it('every distinct key has its own state: no collision, no injection, every key with a TTL', async () => {
      expect(new Set(ODD_KEYS).size).toBe(ODD_KEYS.length);
      const algorithm = slidingWindowLog({ limit: 100, window: '1h' });
      const limiter = new Limiter({
        algorithm,
        store: new RedisStore({ client, prefix, onError: (e) => errors.push(e), timeout: 5_000 }),
      });
      // Key i takes i + 1 units, all concurrently.
      await Promise.all(ODD_KEYS.map((key, i) => limiter.check(key, { cost: i + 1 })));
      const peeked = (await Promise.all(ODD_KEYS.map((key) => limiter.peek(key)))) as Decision[];
      expect(peeked.map((d) => d.remaining)).toEqual(ODD_KEYS.map((_, i) => 100 - (i + 1)));
      expect(errors).toEqual([]);
      // One Redis key per user key, each under the prefix, each expiring.
      const store = new RedisStore({ client, prefix });
      for (const key of ODD_KEYS) {
        const stored = store.keyFor(algorithm, key);
        expect(stored.startsWith(prefix)).toBe(true);
        expect(await client.pttl(stored)).toBeGreaterThan(0);
      }
      expect(new Set(ODD_KEYS.map((key) => store.keyFor(algorithm, key))).size).toBe(ODD_KEYS.length);
    });

    it('layered limits keyed by odd keys in many slots: no CROSSSLOT, all-or-nothing', async () => {
      const limits = [
        { name: 'a', algorithm: tokenBucket({ capacity: 3, refillInterval: '1h' }) },
        { name: 'b', algorithm: fixedWindow({ limit: 100, window: '1d' }) },
        { name: 'c', algorithm: fixedWindow({ limit: 100, window: '1d' }) },
      ];
      const limiter = new Limiter({
        limits,
        store: new RedisStore({ client, prefix, onError: (e) => errors.push(e), timeout: 5_000 }),
      });
      const [a, b, c] = ['{tag}x', 'x}{tag', `${randomUUID()}\n{`];
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push(((await limiter.check([a, b, c])) as Decision).allowed);
      expect(answers).toEqual([true, true, true, false, false]);
      const after = (await limiter.peek([a, b, c])) as Decision;
      expect(after.limits.map((d) => d.remaining)).toEqual([0, 97, 97]);
      expect(errors).toEqual([]);
    });
  });
}

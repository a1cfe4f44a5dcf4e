// Where the Fastify plugin's default onError and onWarning go: Fastify's logger when the app
// enabled it, else the console output every other adapter uses, so that an app on Fastify's
// default (no logger) still hears that sluice could not do what was asked.
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fixedWindow } from '@sluice/core';
import { sluice } from '@sluice/fastify';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { forgetWarnings } from '../setup/process-warnings.js';

const algorithm = fixedWindow({ limit: 1000, window: '1m' });

/** What a sluice default wrote to the console: `console.error` lines and process warnings. */
function spyConsole(): { errors: unknown[][]; warnings: unknown[][] } {
  const errors: unknown[][] = [];
  const warnings: unknown[][] = [];
  vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
    errors.push(args);
  });
  vi.spyOn(process, 'emitWarning').mockImplementation((...args: unknown[]) => {
    warnings.push(args);
  });
  return { errors, warnings };
}

/** A Fastify logger writing JSON lines into an array. */
function logLines(): { stream: Writable; lines: Array<{ msg?: string; level: number; code?: string }> } {
  const lines: Array<{ msg?: string; level: number; code?: string }> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line !== '') lines.push(JSON.parse(line));
      done();
    },
  });
  return { stream, lines };
}

/** One GET over a Unix domain socket: the connection has no client address. */
async function overUnixSocket(app: FastifyInstance): Promise<number> {
  const path = join(
    tmpdir(),
    `sluice-fastify-log-${process.pid}-${Math.random().toString(36).slice(2)}.sock`,
  );
  await app.listen({ path });
  return new Promise((resolve, reject) => {
    const req = httpRequest({ socketPath: path, path: '/', method: 'GET' }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('fastify: where the default onError and onWarning go', () => {
  beforeEach(() => {
    forgetWarnings();
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  describe("Fastify's logger off (its default)", () => {
    it('a key function that throws: the error reaches the console', async () => {
      const { errors } = spyConsole();
      const app = Fastify();
      await app.register(sluice, {
        name: 'k',
        algorithm,
        key: () => {
          throw new Error('key failed');
        },
      });
      app.get('/', async () => 'ok');
      try {
        expect((await app.inject('/')).statusCode).toBe(200);
      } finally {
        await app.close();
      }
      expect(
        errors.some((args) => args.some((arg) => arg instanceof Error && arg.message === 'key failed')),
      ).toBe(true);
    });

    it('an untrusted X-Forwarded-For: SLUICE_FORWARDED_UNTRUSTED reaches the console', async () => {
      const { warnings } = spyConsole();
      const app = Fastify();
      await app.register(sluice, { name: 'ip', algorithm });
      app.get('/', async () => 'ok');
      try {
        await app.inject({ url: '/', headers: { 'x-forwarded-for': '203.0.113.7' } });
      } finally {
        await app.close();
      }
      expect(warnings.map((args) => (args[1] as { code?: string } | undefined)?.code)).toContain(
        'SLUICE_FORWARDED_UNTRUSTED',
      );
    });

    it('a Unix-socket listener (no client address): SLUICE_NO_CLIENT_ADDRESS reaches the console', async () => {
      const { warnings } = spyConsole();
      const app = Fastify();
      await app.register(sluice, { name: 'ip', algorithm });
      app.get('/', async () => 'ok');
      try {
        await overUnixSocket(app);
      } finally {
        await app.close();
      }
      expect(warnings.map((args) => (args[1] as { code?: string } | undefined)?.code)).toContain(
        'SLUICE_NO_CLIENT_ADDRESS',
      );
    });
  });

  describe("Fastify's logger on", () => {
    it("errors and warnings go to Fastify's logger, not to the console", async () => {
      const { errors, warnings } = spyConsole();
      const { stream, lines } = logLines();
      const app = Fastify({ logger: { stream, level: 'warn' } });
      await app.register(sluice, { name: 'ip', algorithm });
      app.get(
        '/fail',
        {
          config: {
            rateLimit: {
              name: 'k',
              algorithm,
              key: () => {
                throw new Error('key failed');
              },
            },
          },
        },
        async () => 'ok',
      );
      app.get('/', async () => 'ok');
      try {
        await app.inject('/fail');
        await app.inject({ url: '/', headers: { 'x-forwarded-for': '203.0.113.7' } });
        await overUnixSocket(app);
      } finally {
        await app.close();
      }
      expect(lines.filter((line) => line.level === 50).map((line) => line.msg)).toContain(
        'sluice: limiter error, request handled by the storeFailure policy',
      );
      expect(lines.filter((line) => line.level === 40).map((line) => line.code)).toEqual(
        expect.arrayContaining(['SLUICE_FORWARDED_UNTRUSTED', 'SLUICE_NO_CLIENT_ADDRESS']),
      );
      expect([errors, warnings]).toEqual([[], []]);
    });

    it("at level 'silent', the app's choice of silence: nothing on the console either", async () => {
      const { errors, warnings } = spyConsole();
      const app = Fastify({ logger: { level: 'silent' } });
      await app.register(sluice, {
        name: 'k',
        algorithm,
        key: () => {
          throw new Error('key failed');
        },
      });
      app.get('/', async () => 'ok');
      try {
        await app.inject({ url: '/', headers: { 'x-forwarded-for': '203.0.113.7' } });
      } finally {
        await app.close();
      }
      expect([errors, warnings]).toEqual([[], []]);
    });

    it('a loggerInstance of another kind than pino (no level) is used too', async () => {
      const { errors } = spyConsole();
      const written: string[] = [];
      const at =
        (level: string) =>
        (...args: unknown[]) => {
          written.push(`${level} ${String(args.at(-1))}`);
        };
      const logger = {
        fatal: at('fatal'),
        error: at('error'),
        warn: at('warn'),
        info: at('info'),
        debug: at('debug'),
        trace: at('trace'),
        child: () => logger,
      };
      const app = Fastify({ loggerInstance: logger as unknown as FastifyBaseLogger });
      await app.register(sluice, {
        name: 'k',
        algorithm,
        key: () => {
          throw new Error('key failed');
        },
      });
      app.get('/', async () => 'ok');
      try {
        await app.inject('/');
      } finally {
        await app.close();
      }
      expect(written).toContain('error sluice: limiter error, request handled by the storeFailure policy');
      expect(errors).toEqual([]);
    });
  });
});

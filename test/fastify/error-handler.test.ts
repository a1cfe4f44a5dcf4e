/**
 * Issue 32 §8: sluice's refusals bypassed the app's `setErrorHandler`, which @fastify/rate-limit's
 * go through, so an app's custom 429 body and its error logging stopped in silence after a
 * migration. A refusal is now an error handed to the route's error handler when the app set one;
 * without one, the default problem body is sent as before.
 */
import { fixedWindow, MemoryStore } from '@sluice/core';
import { RateLimitedError, sluice } from '@sluice/fastify';
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';

const still = () => new MemoryStore({ clock: () => Date.UTC(2026, 0, 1, 12, 0, 0) });
const one = { name: 'api', algorithm: fixedWindow({ limit: 1, window: '1m' }) };

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe("@sluice/fastify: refusals through the app's error handler (issue 32 §8)", () => {
  it("regression (issue 32 §8): the app's setErrorHandler answers a refusal, with the status, headers and decision", async () => {
    app = Fastify();
    const seen: unknown[] = [];
    app.setErrorHandler((error: FastifyError, _request, reply) => {
      seen.push(error);
      reply.code(error.statusCode ?? 500).send({ custom: true, code: error.code });
    });
    await app.register(sluice, { ...one, store: still() });
    app.get('/', async () => 'ok');
    expect((await app.inject({ url: '/' })).statusCode).toBe(200);
    const refused = await app.inject({ url: '/' });
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toEqual({ custom: true, code: 'ERR_SLUICE_RATE_LIMITED' });
    // The headers were set before the handler ran, and stay.
    expect(refused.headers['retry-after']).toMatch(/^\d+$/);
    expect(refused.headers.ratelimit).toMatch(/^"api";r=0;/);
    expect(seen).toHaveLength(1);
    const error = seen[0] as RateLimitedError;
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error.statusCode).toBe(429);
    expect(error.decision).toMatchObject({ allowed: false, policy: 'api' });
    expect(error.body).toMatchObject({ status: 429, 'violated-policies': ['api'] });
  });

  it('an error handler set in an encapsulated context answers its own routes only', async () => {
    app = Fastify();
    await app.register(sluice, { ...one, store: still() });
    await app.register(async (child) => {
      child.setErrorHandler((_error, _request, reply) => {
        reply.code(429).send('slow down');
      });
      child.get('/child', async () => 'ok');
    });
    app.get('/root', async () => 'ok');
    await app.inject({ url: '/child' });
    const inChild = await app.inject({ url: '/child' });
    expect([inChild.statusCode, inChild.body]).toEqual([429, 'slow down']);
    const atRoot = await app.inject({ url: '/root' });
    expect(atRoot.statusCode).toBe(429);
    expect(atRoot.headers['content-type']).toMatch(/^application\/problem\+json/);
  });

  it("without the app's error handler the problem body is sent, as before", async () => {
    app = Fastify();
    await app.register(sluice, { ...one, store: still() });
    app.get('/', async () => 'ok');
    await app.inject({ url: '/' });
    const refused = await app.inject({ url: '/' });
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.json()).toMatchObject({ status: 429, 'violated-policies': ['api'] });
  });

  it("the plugin's own `handler` still wins over the error handler", async () => {
    app = Fastify();
    app.setErrorHandler((_error, _request, reply) => {
      reply.code(500).send('error handler');
    });
    await app.register(sluice, { ...one, store: still(), handler: () => 'handler' });
    app.get('/', async () => 'ok');
    await app.inject({ url: '/' });
    const refused = await app.inject({ url: '/' });
    expect([refused.statusCode, refused.body]).toEqual([429, 'handler']);
  });
});

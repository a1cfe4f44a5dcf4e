/**
 * Every invalid option of the adapters, the key functions and the Redis store throws its coded
 * error at creation. Algorithm, Limiter and MemoryStore options are covered by
 * test/core/validation.test.ts, the commonest adapter and RedisStore mistakes by
 * test/adapters/suite.ts and test/redis/redis-store.test.ts; this file adds the rest.
 */
import { byIp, byToken, compose, ErrorCode, fixedWindow } from '@sluice/core';
import { rateLimit } from '@sluice/express';
import { sluice } from '@sluice/fastify';
import { RedisStore } from '@sluice/redis';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { Redis } from '../redis/client-family.js';

const algorithm = fixedWindow({ limit: 1, window: '1s' });

/** Options every adapter shares, each wrong in one way, and the code it must produce. */
const SHARED: [string, Record<string, unknown>, string][] = [
  ['storeFailure not allow/deny', { algorithm, storeFailure: 'maybe' }, ErrorCode.INVALID_OPTION],
  ['onLimit not refuse/delay', { algorithm, onLimit: 'wait' }, ErrorCode.INVALID_OPTION],
  [
    'maxDelay unreadable',
    { algorithm, onLimit: 'delay', maxDelay: '5 sec onds' },
    ErrorCode.INVALID_DURATION,
  ],
  ['maxDelay negative', { algorithm, onLimit: 'delay', maxDelay: -1 }, ErrorCode.INVALID_OPTION],
  ['skip not a function', { algorithm, skip: true }, ErrorCode.INVALID_OPTION],
  ['onError not a function', { algorithm, onError: 'log' }, ErrorCode.INVALID_OPTION],
  ['onLimited not a function', { algorithm, onLimited: {} }, ErrorCode.INVALID_OPTION],
  ['onWarning not a function', { algorithm, onWarning: 1 }, ErrorCode.INVALID_OPTION],
  ['hold not a function', { algorithm, hold: 5 }, ErrorCode.INVALID_OPTION],
  ['cost fractional', { algorithm, cost: 1.5 }, ErrorCode.INVALID_OPTION],
  ['allowList not an array', { algorithm, allowList: '10.0.0.0/8' }, ErrorCode.INVALID_OPTION],
  ['allowList entry not an address', { algorithm, allowList: ['localhost'] }, ErrorCode.INVALID_OPTION],
  ['a key that is not a function', { algorithm, key: 'ip' }, ErrorCode.INVALID_OPTION],
  ['a name that cannot go in a header', { algorithm, name: 'brûlé' }, ErrorCode.INVALID_OPTION],
  ['key and name beside limits', { limits: [{ algorithm }], name: 'x' }, ErrorCode.INVALID_OPTION],
  ['a typo inside a limit', { limits: [{ algorithm, kye: byIp() }] }, ErrorCode.UNKNOWN_OPTION],
  ['an empty limits array', { limits: [] }, ErrorCode.INVALID_OPTION],
  ['a store that is not an algorithm', { algorithm: { kind: 'token-bucket' } }, ErrorCode.UNKNOWN_ALGORITHM],
  ['headers: true', { algorithm, headers: true }, ErrorCode.INVALID_OPTION],
];

describe('Express rateLimit()', () => {
  it.each(SHARED)('%s', (_label, options, code) => {
    expect(() => rateLimit(options as never)).toThrow(expect.objectContaining({ code }));
  });
  it('handler not a function', () => {
    expect(() => rateLimit({ algorithm, handler: 'deny' } as never)).toThrow(
      expect.objectContaining({ code: ErrorCode.INVALID_OPTION, option: 'handler' }),
    );
  });
});

describe('Fastify plugin', () => {
  const register = async (options: Record<string, unknown>) => {
    const app = Fastify();
    try {
      await app.register(sluice, options as never);
      await app.ready();
      return 'created';
    } catch (error) {
      return (error as { code?: string }).code;
    } finally {
      await app.close();
    }
  };
  it.each(SHARED)('%s', async (_label, options, code) => {
    expect(await register(options)).toBe(code);
  });
  it('hook not onRequest/preHandler', async () => {
    expect(await register({ algorithm, hook: 'onSend' })).toBe(ErrorCode.INVALID_OPTION);
  });
  it('a typo in the plugin options', async () => {
    expect(await register({ algorithm, stroe: 1 })).toBe(ErrorCode.UNKNOWN_OPTION);
  });
});

describe('key functions', () => {
  it.each([
    ['byIp: ipv6Subnet above 64', () => byIp({ ipv6Subnet: 65 }), ErrorCode.INVALID_OPTION],
    ['byIp: ipv6Subnet below 32', () => byIp({ ipv6Subnet: 16 }), ErrorCode.INVALID_OPTION],
    ['byIp: ipv6Subnet fractional', () => byIp({ ipv6Subnet: 56.5 }), ErrorCode.INVALID_OPTION],
    ['byIp: a typo', () => byIp({ subnet: 56 } as never), ErrorCode.UNKNOWN_OPTION],
    ['byToken: a header name with a space', () => byToken({ header: 'x api key' }), ErrorCode.INVALID_OPTION],
    ['byToken: a header name with a newline', () => byToken({ header: 'x\nkey' }), ErrorCode.INVALID_OPTION],
    ['byToken: a scheme with a space', () => byToken({ scheme: 'Bear er' }), ErrorCode.INVALID_OPTION],
    ['byToken: a typo', () => byToken({ headr: 'x' } as never), ErrorCode.UNKNOWN_OPTION],
    ['compose: nothing', () => compose(), ErrorCode.INVALID_OPTION],
    ['compose: not a function', () => compose('ip' as never), ErrorCode.INVALID_OPTION],
  ])('%s', (_label, create, code) => {
    expect(create).toThrow(expect.objectContaining({ code }));
  });
});

describe('RedisStore (beyond test/redis/redis-store.test.ts)', () => {
  // Never connected: validation happens before any I/O.
  const client = new Redis({ lazyConnect: true });
  it.each([
    ['a prefix that is not a string', { client, prefix: 5 }, ErrorCode.INVALID_OPTION],
    ['a negative timeout', { client, timeout: -5 }, ErrorCode.INVALID_OPTION],
    ['an infinite timeout', { client, timeout: Number.POSITIVE_INFINITY }, ErrorCode.INVALID_OPTION],
    ['a clock that is not a function', { client, clock: 5 }, ErrorCode.INVALID_OPTION],
    ['onError not a function', { client, onError: true }, ErrorCode.INVALID_OPTION],
    ['onBreakerChange not a function', { client, onBreakerChange: 'x' }, ErrorCode.INVALID_OPTION],
    ['a fractional deny cache', { client, denyCache: 1.5 }, ErrorCode.INVALID_OPTION],
    ['a typo in the breaker', { client, breaker: { failure: 3 } }, ErrorCode.UNKNOWN_OPTION],
    ['a breaker that is not an object', { client, breaker: true }, ErrorCode.INVALID_OPTION],
    ['a fallback that is not a store', { client, failurePolicy: { consume() {} } }, ErrorCode.INVALID_OPTION],
  ])('rejects %s', (_label, options, code) => {
    expect(() => new RedisStore(options as never)).toThrow(expect.objectContaining({ code }));
  });
});

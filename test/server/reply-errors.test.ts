import { fixedWindow, Limiter } from '@sluice/core';
import { ServerStore, type ServerStoreErrorEvent } from '@sluice/server';
import { ReplyError } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { serverAnswered } from '../../packages/server/src/reply-error.js';
import { startServer, type TestServer } from './harness.js';

// Issue 35: the call gate moved to @sluice/core/gate, which reads no backend's error replies;
// ServerStore brings its own rule for sluice-server's. A reply about one call proves the server
// answers: it is answered by the failure policy but must not open the breaker (one bad call would
// otherwise send every key to the policy for a cooldown).

describe("ServerStore: sluice-server's reply errors", () => {
  let server: TestServer | undefined;

  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  it('a call the server refuses with ERR is answered by the policy, reported, and leaves the breaker closed', async () => {
    // Three layered limits make an SL.CHECK longer than the server takes.
    server = await startServer({ maxArgs: 8 });
    const client = await server.client({ enableOfflineQueue: false });
    const errors: ServerStoreErrorEvent[] = [];
    const store = new ServerStore({
      client,
      failurePolicy: 'allow',
      breaker: { failures: 1, cooldown: 60_000 },
      onError: (event) => errors.push(event),
    });
    const algorithm = fixedWindow({ limit: 5, window: '1m' });
    const limiter = new Limiter({
      limits: ['a', 'b', 'c'].map((name) => ({ name, algorithm })),
      store,
    });
    expect(await limiter.check('k')).toMatchObject({ allowed: true, reason: 'store-unavailable' });
    expect(errors).toHaveLength(1);
    expect(errors[0]!.error).toMatchObject({
      name: 'ReplyError',
      message: expect.stringMatching(/^ERR too many arguments/),
    });
    expect(store.breakerState).toBe('closed');
    // A call the server takes is still sent to it (a breaker opened by the refusal would answer it).
    const single = new Limiter({ algorithm, store });
    expect(await single.check('k')).toMatchObject({ allowed: true, remaining: 4, reason: undefined });
  });

  it('counts only ERR replies about the call: not the server refusing a client, nor other errors', () => {
    expect(serverAnswered(new ReplyError('ERR syntax error: COST needs a value'))).toBe(true);
    expect(serverAnswered(new ReplyError('ERR max number of clients reached'))).toBe(false);
    expect(serverAnswered(new Error('ERR syntax error'))).toBe(false);
    expect(serverAnswered(new Error('connect ECONNREFUSED 127.0.0.1:9049'))).toBe(false);
    expect(serverAnswered('ERR syntax error')).toBe(false);
  });
});

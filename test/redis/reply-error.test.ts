import { Cluster, Redis, ReplyError } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { answeredBy, isClusterDown } from '../../packages/redis/src/reply-error.js';

// Which failed calls prove Redis answers (the breaker hears a success), from the errors as ioredis
// builds them: a reply (`ReplyError`), and past `maxRedirections` in its Cluster's handleError,
// `new Error('Too many Cluster redirections. Last error: ' + error)`.

/** ioredis' rejection after `maxRedirections`, whose last error was `last`. */
const redirections = (last: Error) => new Error(`Too many Cluster redirections. Last error: ${last}`);
const reply = (text: string) => new ReplyError(text);

const clusterDown = reply('CLUSTERDOWN The cluster is down');
const movedLoop = redirections(reply('MOVED 7629 127.0.0.1:30001'));
const askLoop = redirections(reply('ASK 7629 127.0.0.1:30001'));
const downLoop = redirections(reply('CLUSTERDOWN The cluster is down'));
const tryAgainLoop = redirections(reply('TRYAGAIN Multiple keys request during rehashing of slot'));
const closedLoop = redirections(new Error('Connection is closed.'));

describe('isClusterDown', () => {
  it('the refusal itself, and a redirection loop that ended on CLUSTERDOWN: answered, whatever the client', () => {
    for (const resends of [true, false]) {
      expect(isClusterDown(clusterDown, resends)).toBe(true);
      expect(isClusterDown(downLoop, resends)).toBe(true);
    }
  });

  it('a loop that ended on MOVED or ASK: answered only from a client that re-sends CLUSTERDOWN', () => {
    // Re-sending CLUSTERDOWN to a random node, which answers MOVED back to the refusing one.
    expect(isClusterDown(movedLoop, true)).toBe(true);
    expect(isClusterDown(askLoop, true)).toBe(true);
    // No CLUSTERDOWN loop exists: the slot's owner cannot be reached (live nodes send MOVED to it).
    expect(isClusterDown(movedLoop, false)).toBe(false);
    expect(isClusterDown(askLoop, false)).toBe(false);
  });

  it('a loop that ended on another reply is answered; one that ended on a closed connection is not', () => {
    expect(isClusterDown(tryAgainLoop, false)).toBe(true);
    for (const resends of [true, false]) expect(isClusterDown(closedLoop, resends)).toBe(false);
  });

  it('neither a reply about the call, nor a transport error, nor a non-Error', () => {
    for (const error of [reply('WRONGTYPE Operation'), new Error('Connection is closed.'), 'CLUSTERDOWN x']) {
      expect(isClusterDown(error, true)).toBe(false);
    }
  });
});

describe('answeredBy: each client settings', () => {
  const readme = new Cluster([{ host: '127.0.0.1', port: 1 }], {
    lazyConnect: true,
    retryDelayOnFailover: 10,
    retryDelayOnClusterDown: 0,
  });
  const defaults = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
  const slower = new Cluster([{ host: '127.0.0.1', port: 1 }], {
    lazyConnect: true,
    retryDelayOnClusterDown: 50,
  });
  const standalone = new Redis({ port: 1, lazyConnect: true });
  afterAll(() => {
    for (const client of [readme, defaults, slower, standalone]) client.disconnect();
  });

  it("with the README's retryDelayOnClusterDown: 0, a MOVED-ended loop is the node away", () => {
    const answered = answeredBy(readme);
    expect(answered(movedLoop)).toBe(false);
    expect(answered(askLoop)).toBe(false);
    expect(answered(closedLoop)).toBe(false);
    expect(answered(clusterDown)).toBe(true);
    expect(answered(downLoop)).toBe(true);
    expect(answered(reply('WRONGTYPE Operation against a key holding the wrong kind of value'))).toBe(true);
  });

  it("with ioredis' default (100 ms) or any delay above 0, a MOVED-ended loop may be a CLUSTERDOWN loop: answered", () => {
    for (const client of [defaults, slower]) {
      const answered = answeredBy(client);
      expect(answered(movedLoop)).toBe(true);
      expect(answered(askLoop)).toBe(true);
      expect(answered(closedLoop)).toBe(false);
      expect(answered(clusterDown)).toBe(true);
    }
  });

  it('reads the setting when a call fails, as ioredis does when a reply comes', () => {
    const answered = answeredBy(slower);
    const options = slower.options as { retryDelayOnClusterDown: number };
    options.retryDelayOnClusterDown = 0;
    try {
      expect(answered(movedLoop)).toBe(false);
    } finally {
      options.retryDelayOnClusterDown = 50;
    }
    expect(answered(movedLoop)).toBe(true);
  });

  it('a standalone client: replies about the call are answered, transport errors are not', () => {
    const answered = answeredBy(standalone);
    expect(answered(reply('ERR value is not an integer or out of range'))).toBe(true);
    expect(answered(reply('ERR max number of clients reached'))).toBe(false);
    expect(answered(new Error('Connection is closed.'))).toBe(false);
    expect(answered(clusterDown)).toBe(true);
  });
});

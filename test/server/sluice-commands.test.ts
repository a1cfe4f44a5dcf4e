import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisCli, startServer, type TestServer } from './harness.js';

const T0 = 1_800_000_000_000;

/** Field/value pairs to an object (nested `limits` too). */
function decision(reply: unknown): Record<string, unknown> {
  const pairs = reply as unknown[];
  const out: Record<string, unknown> = {};
  for (let i = 0; i < pairs.length; i += 2) {
    const value = pairs[i + 1];
    out[pairs[i] as string] = pairs[i] === 'limits' ? (value as unknown[]).map(decision) : value;
  }
  return out;
}

describe('sluice commands (SL.*) as users type them', () => {
  let t: TestServer;
  let client: Redis;
  beforeAll(async () => {
    t = await startServer();
    client = await t.client();
  });
  afterAll(() => t.stop());

  it('SL.CHECK with option values as core reads them, and the Decision as the reply', async () => {
    const check = () => client.call('SL.CHECK', 'AT', String(T0), 'LIMIT', 'gcra:rate=2,period=1s', 'user:1');
    expect(decision(await check())).toMatchObject({
      allowed: 1,
      limit: 2,
      remaining: 1,
      retryAfter: 0,
      policy: 'gcra',
      reason: null,
    });
    await check();
    expect(decision(await check())).toMatchObject({
      allowed: 0,
      remaining: 0,
      retryAfter: 500,
      reason: 'rate-limited',
    });
  });

  it('redis-cli prints the decision as field/value lines', async () => {
    const out = await redisCli(t.port, [
      'SL.CHECK',
      'LIMIT',
      'fixed-window:limit=5,window=1h',
      'cli-user',
      'COST',
      '2',
      'POLICY',
      'api',
    ]);
    const lines = out.split('\n');
    expect(lines.slice(0, 16)).toEqual(
      expect.arrayContaining(['allowed', '1', 'remaining', '3', 'policy', 'api']),
    );
  });

  it('a layered check is all-or-nothing: the refusal of one limit consumes none', async () => {
    const layered = (cost: number) =>
      client.call(
        'SL.CHECK',
        'AT',
        String(T0),
        'LIMIT',
        'token-bucket:capacity=10,refillInterval=1h',
        'ip:9',
        'COST',
        String(cost),
        'POLICY',
        'ip',
        'LIMIT',
        'fixed-window:limit=3,window=1h',
        'user:9',
        'COST',
        String(cost),
        'POLICY',
        'user',
      );
    expect(decision(await layered(2))).toMatchObject({ allowed: 1, policy: 'user', remaining: 1 });
    const refused = decision(await layered(2));
    expect(refused).toMatchObject({ allowed: 0, policy: 'user', reason: 'rate-limited' });
    expect(
      (refused.limits as Record<string, unknown>[]).map((d) => [d.policy, d.allowed, d.remaining]),
    ).toEqual([
      ['ip', 1, 8],
      ['user', 0, 1],
    ]);
    // The ip bucket was not consumed by the refused request: 8 left, not 6.
    const peek = decision(
      await client.call(
        'SL.PEEK',
        'AT',
        String(T0),
        'LIMIT',
        'token-bucket:capacity=10,refillInterval=1h',
        'ip:9',
      ),
    );
    expect(peek.remaining).toBe(8);
  });

  it('COMPACT: five numbers per limit (reason code, remaining, resetAfter, retryAfter, delay), the same decision', async () => {
    const args = (compact: boolean, key: string) => [
      'AT',
      String(T0),
      ...(compact ? ['COMPACT'] : []),
      'LIMIT',
      'token-bucket:capacity=10,refillInterval=1h',
      `${key}:ip`,
      'COST',
      '4',
      'LIMIT',
      'fixed-window:limit=5,window=1s',
      `${key}:user`,
      'COST',
      '4',
      'POLICY',
      'user',
      'LIMIT',
      'gcra:rate=1,period=1s',
      `${key}:huge`,
      'COST',
      '7',
    ];
    for (const command of ['SL.PEEK', 'SL.CHECK']) {
      const full = decision(await client.call(command, ...args(false, 'full')));
      const compact = await client.call(command, ...args(true, 'compact'));
      const codes = [undefined, 'rate-limited', 'cost-exceeds-limit', 'concurrency'];
      const limits = full.limits as Record<string, unknown>[];
      expect(compact).toEqual(
        limits.flatMap((d) => [
          codes.indexOf((d.reason ?? undefined) as string | undefined),
          d.remaining,
          d.resetAfter,
          d.retryAfter,
          d.delay,
        ]),
      );
      // the refusal of the gcra limit (cost above what it can ever admit) is coded 2
      expect((compact as number[])[10]).toBe(2);
    }
  });

  it('SL.RESET forgets a key; SL.REFUND gives units back', async () => {
    const spec = 'sliding-window-log:limit=2,window=1m';
    await client.call('SL.CHECK', 'AT', String(T0), 'LIMIT', spec, 'r');
    await client.call('SL.CHECK', 'AT', String(T0), 'LIMIT', spec, 'r');
    expect(await client.call('SL.REFUND', 'AT', String(T0), 'LIMIT', spec, 'r')).toBe('OK');
    expect(decision(await client.call('SL.PEEK', 'AT', String(T0), 'LIMIT', spec, 'r')).remaining).toBe(1);
    expect(await client.call('SL.RESET', 'LIMIT', spec, 'r')).toBe('OK');
    expect(decision(await client.call('SL.PEEK', 'AT', String(T0), 'LIMIT', spec, 'r')).remaining).toBe(2);
  });

  it('bad input gets a coded error, and the connection stays usable', async () => {
    const cases: [string[], RegExp][] = [
      [['SL.CHECK', 'LIMIT', 'nope:x=1', 'k'], /^ERR_SLUICE_UNKNOWN_ALGORITHM unknown algorithm "nope"/],
      [
        ['SL.CHECK', 'LIMIT', 'gcra:rate=0,period=1s', 'k'],
        /^ERR_SLUICE_INVALID_OPTION rate must be an integer/,
      ],
      [
        ['SL.CHECK', 'LIMIT', 'gcra:rate=1,period=1s,colour=red', 'k'],
        /^ERR_SLUICE_UNKNOWN_OPTION gcra: bad parameter "colour=red"/,
      ],
      [['SL.CHECK', 'LIMIT', 'gcra:rate=1,period=1s', 'k', 'COST', '0'], /^ERR_SLUICE_INVALID_COST/],
      [['SL.CHECK', 'AT', 'soon', 'LIMIT', 'gcra:rate=1,period=1s', 'k'], /^ERR_SLUICE_INVALID_TIME/],
      [['SL.CHECK', 'LIMIT', 'gcra:rate=1,period=1s'], /^ERR wrong number of arguments/],
      [['SL.CHECK', 'LIMIT', 'gcra:rate=1,period=1s', 'k', 'EXTRA'], /^ERR syntax error/],
    ];
    for (const [args, error] of cases) {
      await expect(client.call(args[0]!, ...args.slice(1)), args.join(' ')).rejects.toThrow(error);
    }
    expect(await client.ping()).toBe('PONG');
  });
});

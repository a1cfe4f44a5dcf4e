import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisCli, startServer, type TestServer } from './harness.js';
import { FULL_BUCKET_KEEPS_PROGRESS, TABLE, viaCli, viaIoredis } from './smyte-table.js';

describe('Smyte compatibility: RL.REDUCE / RL.GET / RL.PREDUCE / RL.PGET', () => {
  let t: TestServer;
  let client: Redis;
  beforeAll(async () => {
    t = await startServer();
    client = await t.client();
  });
  afterAll(() => t.stop());

  it("README example with the server's clock: 2, then 1, then 0 (redis-cli)", async () => {
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await redisCli(t.port, ['RL.REDUCE', 'twoPerMin', '2', '60']));
    expect(answers).toEqual(['2', '1', '0', '0']);
  });

  it('README example with ioredis', async () => {
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await client.call('RL.REDUCE', 'twoPerMinIo', '2', '60'));
    expect(answers).toEqual([2, 1, 0]);
  });

  for (const [group, rows] of Object.entries(TABLE)) {
    it(`${group} (ioredis)`, async () => {
      const answers = [];
      for (const [command] of rows) answers.push([command, await viaIoredis(client, command, 'io:')]);
      expect(answers).toEqual(rows.map(([command, answer]) => [command, answer]));
    });
    it(`${group} (redis-cli)`, async () => {
      const answers = [];
      for (const [command] of rows) answers.push([command, await viaCli(t.port, command, 'cli:')]);
      expect(answers).toEqual(rows.map(([command, answer]) => [command, answer]));
    });
  }

  it('a full bucket keeps its progress toward the next refill', async () => {
    const answers = [];
    for (const [command] of FULL_BUCKET_KEEPS_PROGRESS)
      answers.push(await viaIoredis(client, command, 'full:'));
    expect(answers).toEqual(FULL_BUCKET_KEEPS_PROGRESS.map(([, answer]) => answer));
  });

  it('binary keys are kept byte for byte', async () => {
    const key = Buffer.from([0xff, 0x00, 0x0d, 0x0a, 0x80]);
    const other = Buffer.from([0xff, 0x00, 0x0d, 0x0a, 0x81]);
    expect(await client.call('RL.PREDUCE', key, '2', '1000', 'AT', '0')).toBe(2);
    expect(await client.call('RL.PREDUCE', key, '2', '1000', 'AT', '0')).toBe(1);
    expect(await client.call('RL.PREDUCE', other, '2', '1000', 'AT', '0')).toBe(2);
  });
});

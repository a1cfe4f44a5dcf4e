import { rm } from 'node:fs/promises';
import { shardOf, storedIdOfText } from '@sluice/host/state';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectNoAcknowledgedLoss } from './crash-load.js';
import {
  crowdOnOneBucket,
  eachTokenOnce,
  type ServerProcess,
  spawnServer,
  tempDir,
  until,
} from './harness.js';
import { TABLE, viaCli, viaIoredis } from './smyte-table.js';

/**
 * Issue 23, section 3: `--workers N` serves one port from N processes over one LMDB environment.
 * Decisions must stay exact across workers (each reads, decides and writes inside an LMDB write
 * transaction, which LMDB runs one at a time across processes), and a crash must lose nothing
 * acknowledged, whether the whole server dies or one worker does.
 */

const WORKERS = 2;

// Issue 36: with shards, the workers queue per shard instead of all for one lock; every guarantee
// above must hold the same, and a check over keys of two shards stays all-or-nothing.
for (const SHARDS of [1, 4]) {
  describe(`sluice-server --workers ${WORKERS} --shards ${SHARDS}`, () => {
    let dir: string;
    let server: ServerProcess;
    const clients: Redis[] = [];
    const connect = async () => {
      const client = new Redis({ host: '127.0.0.1', port: server.port, lazyConnect: true });
      clients.push(client);
      await client.connect();
      return client;
    };
    beforeAll(async () => {
      dir = await tempDir();
      server = await spawnServer(dir, undefined, ['--workers', String(WORKERS), '--shards', String(SHARDS)]);
    });
    afterAll(async () => {
      for (const client of clients) client.disconnect();
      await server.kill('SIGTERM');
      await rm(dir, { recursive: true, force: true });
    });

    it('no worker listens, so none decides, before every worker has opened the environment', () => {
      // lmdb-js loses a commit made while another process opens the environment (the host
      // README's known issue): at start the primary lets the workers listen only once all opened.
      const events = server.events().map((e) => e.event);
      const opened = events.indexOf('workers-opened');
      expect(opened).toBeGreaterThanOrEqual(0);
      expect(events.filter((e) => e === 'worker-listening')).toHaveLength(WORKERS);
      expect(events.slice(0, opened)).not.toContain('worker-listening');
    });

    it('spreads connections over every worker', async () => {
      const seen = new Set<number>();
      for (let i = 0; i < 4 * WORKERS; i++) {
        const info = (await (await connect()).info('server')) as string;
        seen.add(Number(/^worker:(\d+)/m.exec(info)?.[1]));
      }
      expect([...seen].sort()).toEqual(Array.from({ length: WORKERS }, (_, i) => i));
    });

    for (const [group, rows] of Object.entries(TABLE)) {
      it(`Smyte's table: ${group} (ioredis, one connection)`, async () => {
        const client = await connect();
        const answers = [];
        for (const [command] of rows) answers.push([command, await viaIoredis(client, command, 'w-io:')]);
        expect(answers).toEqual(rows.map(([command, answer]) => [command, answer]));
      });
      it(`Smyte's table: ${group} (redis-cli, a connection per command: the workers take turns)`, async () => {
        const answers = [];
        for (const [command] of rows) answers.push([command, await viaCli(server.port, command, 'w-cli:')]);
        expect(answers).toEqual(rows.map(([command, answer]) => [command, answer]));
      });
    }

    it('40 clients on one bucket across the workers: exactly the bucket is admitted, each token once', async () => {
      const crowd = await Promise.all(Array.from({ length: 40 }, () => connect()));
      // One command at a time per client: many small turns on each worker, interleaved.
      expect(eachTokenOnce(await crowdOnOneBucket(crowd))).toEqual({
        handedOut: Array.from({ length: 1000 }, (_, i) => i + 1),
        refused: 200,
      });
    });

    it('a sliding window log across the workers admits exactly its limit', async () => {
      const crowd = await Promise.all(Array.from({ length: 20 }, () => connect()));
      const spec = 'sliding-window-log:limit=250,window=1h';
      const allowed = await Promise.all(
        crowd.map(async (c, n) => {
          let admitted = 0;
          for (let i = 0; i < 20; i++) {
            const at = String(1_800_000_000_000 + n * 20 + i);
            const reply = (await c.call('SL.CHECK', 'AT', at, 'COMPACT', 'LIMIT', spec, 'log')) as number[];
            if (reply[0] === 0) admitted++;
          }
          return admitted;
        }),
      );
      expect(allowed.reduce((a, b) => a + b, 0)).toBe(250);
    });

    it('a concurrency lease limit across the workers holds exactly its limit', async () => {
      const crowd = await Promise.all(Array.from({ length: 20 }, () => connect()));
      const acquire = (c: Redis, id: string) =>
        c.call('SL.LEASE', 'ACQUIRE', 'api', 'user:1', id, '5', '60000', '100', 'p') as Promise<unknown[]>;
      const decisions = await Promise.all(crowd.map((c, i) => acquire(c, `lease-${i}`)));
      const holders = decisions.flatMap((d, i) => (d[1] === 1 ? [i] : []));
      expect(holders).toHaveLength(5);
      // One released on one worker frees a slot for a caller on another.
      const released = holders[0]!;
      expect(
        await crowd[(released + 1) % 20]!.call('SL.LEASE', 'RELEASE', 'api', 'user:1', `lease-${released}`),
      ).toBe(1);
      const waiting = Array.from({ length: 20 }, (_, i) => i).filter((i) => !holders.includes(i));
      const again = await Promise.all(waiting.map((i) => acquire(crowd[i]!, `lease-${i}`)));
      expect(again.filter((d) => d[1] === 1)).toHaveLength(1);
    });

    it('a check over two keys (in two shards when there are shards) across the workers: all-or-nothing, exactly', async () => {
      const [tight, loose] = keysInTwoShards(SHARDS);
      const crowd = await Promise.all(Array.from({ length: 20 }, () => connect()));
      const check = (c: Redis, ...limits: string[]) =>
        c.call('SL.CHECK', 'AT', '1800000000000', 'COMPACT', ...limits) as Promise<number[]>;
      const both = [
        'LIMIT',
        'fixed-window:limit=100,window=1h',
        tight,
        'LIMIT',
        'fixed-window:limit=150,window=1h',
        loose,
      ];
      const admitted = await Promise.all(
        crowd.map(async (c) => {
          let n = 0;
          for (let i = 0; i < 10; i++)
            if ((await check(c, ...both)).every((v, j) => j % 5 !== 0 || v === 0)) n++;
          return n;
        }),
      );
      expect(admitted.reduce((a, b) => a + b, 0)).toBe(100);
      // The refused checks took nothing from the looser key: 50 of its 150 are left.
      const alone = await Promise.all(
        crowd.map(async (c) => {
          let n = 0;
          for (let i = 0; i < 4; i++) if ((await check(c, both[3]!, both[4]!, both[5]!))[0] === 0) n++;
          return n;
        }),
      );
      expect(alone.reduce((a, b) => a + b, 0)).toBe(50);
    });
  });
}

/** Two client keys in different shards among `shards` (any two keys when there is one). */
function keysInTwoShards(shards: number): [string, string] {
  const first = 'pair-0';
  for (let i = 1; ; i++) {
    const other = `pair-${i}`;
    if (
      shards === 1 ||
      shardOf(storedIdOfText('x', other), shards) !== shardOf(storedIdOfText('x', first), shards)
    ) {
      return [first, other];
    }
  }
}

describe(`crashes of a --workers ${WORKERS} server under load`, () => {
  for (const durability of ['commit', 'flush'] as const) {
    it(`SIGKILL of the whole server (primary and workers) loses no acknowledged decision (durability ${durability})`, async () => {
      await expectNoAcknowledgedLoss({
        args: ['--workers', String(WORKERS), '--durability', durability],
        crash: (server) => server.kill('SIGKILL'),
        keepGoing: 0,
        restart: true,
      });
    }, 60_000);
  }

  it('SIGKILL of the whole server with --shards 4 loses no acknowledged decision', async () => {
    await expectNoAcknowledgedLoss({
      args: ['--workers', String(WORKERS), '--shards', '4'],
      crash: (server) => server.kill('SIGKILL'),
      keepGoing: 0,
      restart: true,
    });
  }, 60_000);

  it('SIGKILL of one worker: the others carry on, the primary restarts it, and nothing acknowledged is lost', async () => {
    await expectNoAcknowledgedLoss({
      args: ['--workers', String(WORKERS)],
      crash: async (server) => {
        const started = () =>
          server.events().filter((e) => e.event === 'worker-started' && e.fields.worker === 0);
        process.kill(Number(started()[0]!.fields.pid), 'SIGKILL');
        // Restarted and serving again (the primary reports it).
        await until(
          () => started().length === 2 && server.events().some((e) => e.event === 'workers-resumed'),
          'worker 0 restarted',
          30_000,
        );
        // It opened the environment while the others had paused their transactions: lmdb-js loses a
        // commit made while a process opens it (the host README's known issue).
        const events = server.events().map((e) => e.event);
        const paused = events.indexOf('workers-paused');
        expect(paused).toBeGreaterThan(events.indexOf('workers-opened'));
        expect(events.indexOf('workers-resumed')).toBeGreaterThan(paused);
      },
      keepGoing: 1000,
      restart: false,
    });
  }, 60_000);
});

import { rm } from 'node:fs/promises';
import { Redis } from 'ioredis';
import { expect } from 'vitest';
import { type ServerProcess, spawnServer, tempDir } from './harness.js';

const MAX = 1_000_000;
// A refill time no test reaches: every bucket only goes down, so its level counts the writes.
const NEVER = '2000000000';

export interface CrashPlan {
  /** Arguments of the server under load. */
  readonly args: readonly string[];
  /** What happens to it once 2,000 takes are acknowledged. */
  crash(server: ServerProcess): Promise<void>;
  /**
   * Takes acknowledged after the crash before the load stops (0: it stops at once). Clients of a
   * server still up go on; those whose connection died stop.
   */
  readonly keepGoing: number;
  /** Whether the buckets are read from a restarted server (`true`) or the one still running. */
  readonly restart: boolean;
}

/**
 * Load on 24 buckets (6 clients, each owning 4, 16 commands in flight each), a crash, then every
 * bucket read back: every acknowledged take is there, none beyond the takes sent, and no take was
 * answered twice.
 */
export async function expectNoAcknowledgedLoss(plan: CrashPlan): Promise<void> {
  const dir = await tempDir();
  let server: ServerProcess | undefined;
  try {
    server = await spawnServer(dir, undefined, plan.args);
    const port = server.port;
    const keys = Array.from({ length: 24 }, (_, i) => `crash:${i}`);
    const sent = new Map(keys.map((k) => [k, 0]));
    const acked = new Map(keys.map((k) => [k, 0]));
    const replies = new Map<string, number[]>(keys.map((k) => [k, []]));
    let totalAcked = 0;
    let stopped = false;
    const clients = Array.from(
      { length: 6 },
      () =>
        new Redis({
          host: '127.0.0.1',
          port,
          maxRetriesPerRequest: 0,
          enableOfflineQueue: false,
          retryStrategy: () => null,
        }),
    );
    for (const client of clients) client.on('error', () => {});
    const load = clients.map(async (client, c) => {
      await new Promise((r) => client.once('ready', r));
      const mine = keys.filter((_, i) => i % clients.length === c);
      const lane = async (slot: number) => {
        for (let n = 0; !stopped; n++) {
          const key = mine[(n + slot) % mine.length]!;
          sent.set(key, sent.get(key)! + 1);
          try {
            const reply = (await client.call('RL.PREDUCE', key, String(MAX), NEVER, 'AT', '0')) as number;
            acked.set(key, acked.get(key)! + 1);
            replies.get(key)!.push(reply);
            totalAcked++;
          } catch {
            return;
          }
        }
      };
      await Promise.all(Array.from({ length: 16 }, (_, slot) => lane(slot)));
    });
    const until = async (count: number) => {
      while (totalAcked < count) await new Promise((r) => setTimeout(r, 5));
    };
    await until(2000);
    await plan.crash(server);
    if (plan.keepGoing > 0) await until(totalAcked + plan.keepGoing);
    stopped = true;
    await Promise.all(load);
    for (const client of clients) client.disconnect();

    if (plan.restart) {
      await server.kill('SIGKILL');
      server = await spawnServer(dir, undefined, plan.args);
    }
    const check = new Redis({ host: '127.0.0.1', port: server.port });
    try {
      for (const key of keys) {
        const level = (await check.call('RL.PGET', key, String(MAX), NEVER, 'AT', '0')) as number;
        // Every acknowledged take is there; an unacknowledged one may or may not be.
        expect(MAX - level, key).toBeGreaterThanOrEqual(acked.get(key)!);
        expect(MAX - level, key).toBeLessThanOrEqual(sent.get(key)!);
        // Each acknowledged reply was a distinct level: no take was answered twice.
        expect(new Set(replies.get(key)).size, key).toBe(acked.get(key));
      }
    } finally {
      check.disconnect();
    }
  } finally {
    await server?.kill('SIGTERM');
    await rm(dir, { recursive: true, force: true });
  }
}

import { type RedisProcess, startRedis } from '../setup/redis-server.js';
import type { Redis } from './client-family.js';
import { connectRedis } from './clients.js';

/**
 * A redis-server of the test's own, and a client of the suite's client family on it, that counts
 * the scripts (EVALSHA/EVAL) Redis runs: what a deny cache saves shows as round trips that never
 * happen. The count is Redis's own `INFO commandstats`, on a server no other test talks to: it
 * needs no MONITOR connection, whose replies a loaded client could hand to the wrong command
 * (seen on iovalkey at load 5–7: "Command queue state error").
 */
export interface ScriptCounter {
  /** Connected to the private server: give it to the store under test. */
  readonly client: Redis;
  /** The scripts the server has run so far (every call, failed or not: each is a round trip). */
  count(): Promise<number>;
  stop(): Promise<void>;
}

export async function countScripts(): Promise<ScriptCounter> {
  const server: RedisProcess = await startRedis();
  const client = await connectRedis(server.port);
  return {
    client,
    async count() {
      const stats = String(await client.call('INFO', 'commandstats'));
      let scripts = 0;
      for (const match of stats.matchAll(
        /^cmdstat_(evalsha|eval):calls=(\d+)[^\r\n]*?(?:,rejected_calls=(\d+))?/gm,
      )) {
        scripts += Number(match[2]) + Number(match[3] ?? 0);
      }
      return scripts;
    },
    async stop() {
      client.disconnect();
      await server.stop();
    },
  };
}

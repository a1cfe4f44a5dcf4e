import type { Redis } from './client-family.js';
import { connectRedis } from './clients.js';

/**
 * Counts the scripts (EVALSHA/EVAL) Redis runs on keys containing `keyPart`, with MONITOR on its
 * own connection: what a deny cache saves shows as round trips that never happen.
 */
export async function watchScripts(keyPart: string) {
  const monitor = await connectRedis();
  const commands = await monitor.monitor();
  let scripts = 0;
  let synced: () => void = () => {};
  const marker = `sync-${Math.random().toString(36).slice(2)}`;
  commands.on('monitor', (_time: string, args: string[]) => {
    const name = (args[0] ?? '').toLowerCase();
    if ((name === 'evalsha' || name === 'eval') && args.some((a) => a.includes(keyPart))) scripts++;
    if (name === 'echo' && args[1] === marker) synced();
  });
  return {
    /** The scripts run so far, once MONITOR has shown everything `client` sent before this call. */
    async count(client: Redis): Promise<number> {
      const seen = new Promise<void>((resolve) => {
        synced = resolve;
      });
      await client.echo(marker);
      await seen;
      return scripts;
    },
    stop(): void {
      commands.disconnect();
      monitor.disconnect();
    },
  };
}

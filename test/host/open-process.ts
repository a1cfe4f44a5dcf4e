/**
 * A process that opens a HostStore on a path (argv: path, shards) and exits: 0 when it opened,
 * else 1 with the error's message on stderr (concurrent-open.test.ts starts several at once).
 */
import { HostStore } from '@sluice/host';

const [path, shards] = process.argv.slice(2);
try {
  const store = new HostStore({ path: path!, shards: Number(shards), logger: false });
  await store.shutdown();
  process.exit(0);
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(1);
}

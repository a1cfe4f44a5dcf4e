/**
 * A process that opens a HostStore on a path (argv: path, shards, checks), makes `checks` checks
 * on one key against a fixed window of 50 at a fixed time, prints how many were admitted, and
 * exits: 0 when it opened, else 1 with the error's message on stderr (concurrent-open.test.ts
 * starts several at once).
 */
import { fixedWindow, Limiter } from '@sluice/core';
import { HostStore } from '@sluice/host';

const [path, shards, checks] = process.argv.slice(2);
try {
  const store = new HostStore({ path: path!, shards: Number(shards), logger: false });
  const limiter = new Limiter({ algorithm: fixedWindow({ limit: 50, window: '1h' }), store });
  let admitted = 0;
  for (let i = 0; i < Number(checks ?? 0); i++) {
    if ((await limiter.check('one-key', { now: 1_800_000_000_000 })).allowed) admitted++;
  }
  process.stdout.write(`${admitted}\n`);
  await store.shutdown();
  process.exit(0);
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(1);
}

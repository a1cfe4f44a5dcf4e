/**
 * One worker process of the cross-process tests (bundled and forked by workers.ts): it
 * opens HostStores on the paths it is given and runs what the parent asks, answering over IPC.
 * Nothing is mocked: each worker is a separate Node process with its own LMDB handle.
 */
import { writeFileSync } from 'node:fs';
import { ConcurrencyLimiter, type Lease, type LimitDefinition, Limiter } from '@sluice/core';
import { HostStore } from '@sluice/host';
import { StateDb } from '@sluice/host/state';
import { hostKeys } from '../../packages/host/src/host-keys.js';
import { checkOneIn } from '../../packages/host/src/limit-steps.js';
import { build, type Command, neverRefilled } from './worker-commands.js';

const path = process.env.SLUICE_HOST_PATH!;
const shards =
  process.env.SLUICE_HOST_SHARDS === undefined ? undefined : Number(process.env.SLUICE_HOST_SHARDS);
const store = new HostStore({ path, logger: false, ...(shards === undefined ? {} : { shards }) });
const held: Lease[] = [];
let loading = false;

async function run(command: Command): Promise<unknown> {
  if (command.type === 'burst') {
    const limiter = new Limiter({
      limits: command.limits.map((l): LimitDefinition => ({ name: l.name, algorithm: build(l.spec) })),
      store,
    });
    const keys = command.limits.map((l) => l.key);
    let admitted = 0;
    await Promise.all(
      Array.from({ length: command.clients }, async () => {
        for (let round = 0; round < command.rounds; round++) {
          const decision = await limiter.check(keys, { now: command.now });
          if (decision.allowed) admitted++;
          // The next round on a later turn: the processes' transactions interleave.
          await new Promise((resolve) => setImmediate(resolve));
        }
      }),
    );
    return { admitted };
  }
  if (command.type === 'acquire') {
    const limiter = new ConcurrencyLimiter({ name: command.space, limit: command.limit, store });
    const leases = await Promise.all(
      Array.from({ length: command.count }, () => limiter.acquire(command.key, { now: command.now })),
    );
    for (const lease of leases) if (lease.decision.allowed) held.push(lease);
    return { admitted: leases.filter((l) => l.decision.allowed).length };
  }
  if (command.type === 'release-all') {
    const released = await Promise.all(held.splice(0).map((lease) => lease.release(command.now)));
    return { released: released.filter(Boolean).length };
  }
  if (command.type === 'load') {
    // Takes one token at a time from buckets that never refill, until stopped, and reports each
    // acknowledged decision (its key and the tokens it left): a token given twice, or an
    // acknowledged take lost, shows as a repeated value.
    loading = true;
    const limiter = new Limiter({ algorithm: neverRefilled(command.capacity), store });
    let acks: [number, number][] = [];
    const flush = () => {
      if (acks.length > 0) process.send!({ type: 'acks', acks });
      acks = [];
    };
    const timer = setInterval(flush, 10);
    let taken = 0;
    await Promise.all(
      Array.from({ length: command.clients }, async (_, client) => {
        for (let n = client; loading; n++) {
          const k = n % command.keys.length;
          const decision = await limiter.check(command.keys[k]!);
          if (decision.allowed) acks.push([k, decision.remaining]);
          taken++;
        }
      }),
    );
    clearInterval(timer);
    flush();
    return { taken };
  }
  if (command.type === 'hold-lock') {
    // Inside a write transaction (the state layer HostStore runs on): a take written, a marker
    // file to say so, then never commit. The parent kills this process here.
    const db = new StateDb(path, {
      owner: { option: 'path', name: 'sluice host store' },
      durability: 'commit',
      cacheKeys: 0,
      clock: Date.now,
      replayGrace: 0,
      log: () => {},
    });
    const bucket = neverRefilled(command.capacity);
    const id = hostKeys.state(bucket, command.key);
    db.enqueue([id], (tx) => {
      const now = Date.now();
      checkOneIn(tx, bucket, id, command.capacity, 'p', now, now);
      writeFileSync(command.marker, String(process.pid));
      for (;;) {
        // Holding LMDB's write lock until killed.
      }
    });
    return new Promise(() => {});
  }
  loading = false;
  return { stopped: true };
}

process.on('message', (message: { id: number; command: Command }) => {
  run(message.command).then(
    (result) => process.send!({ type: 'result', id: message.id, result }),
    (error: Error) => process.send!({ type: 'result', id: message.id, error: error.stack }),
  );
});
process.send!({ type: 'ready', pid: process.pid });

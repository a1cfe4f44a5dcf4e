// One node of a fleet, for synced-fleet.test.ts: bundled by test/setup/node-script.ts, run from the repo root.
// It holds a SyncedStore (no timer: the test drives the cycles) on a shared Redis and obeys one
// JSON command per stdin line, answering one JSON line:
//
//   { "op": "burst", "keys": ["k"], "n": 10, "now": 1700000000000 }   n checks per key at `now`;
//                                         answers { allowed: [per key] }; with "serial": true, each
//                                         round of one check per key has a sync before and after it
//                                         (the interval at zero)
//   { "op": "sync" }                      one sync cycle; answers {}
//   { "op": "use", "prefix": "p:", "algorithm": {...} }   from now on a new SyncedStore (empty, no
//                                         timer) under `prefix` and a Limiter of `algorithm`, on
//                                         the same client (the old store is shut down); answers {}
//
// argv: JSON `{ ports: number[], cluster: boolean }`. The test reuses one process for many runs
// (a process start costs most of a second of CPU): each run begins with `use`.

import { createInterface } from 'node:readline';
import { type Algorithm, fixedWindow, gcra, Limiter, slidingWindowCounter, tokenBucket } from '@sluice/core';
import { SyncedStore } from '@sluice/redis';
import { connectChild } from './child-node.js';

export type AlgorithmSpec =
  | { kind: 'fixed-window'; limit: number; window: number }
  | { kind: 'sliding-window-counter'; limit: number; window: number; precision: number }
  | { kind: 'token-bucket'; capacity: number; refillAmount: number; refillInterval: number }
  | { kind: 'gcra'; rate: number; period: number; burst: number };

export interface NodeConfig {
  ports: number[];
  cluster: boolean;
}

type Command =
  | { op: 'burst'; keys: string[]; n: number; now: number; serial?: boolean }
  | { op: 'sync' }
  | { op: 'use'; prefix: string; algorithm: AlgorithmSpec };

export function algorithmOf(spec: AlgorithmSpec): Algorithm {
  const { kind, ...options } = spec;
  if (kind === 'fixed-window') return fixedWindow(options as Parameters<typeof fixedWindow>[0]);
  if (kind === 'sliding-window-counter')
    return slidingWindowCounter(options as Parameters<typeof slidingWindowCounter>[0]);
  if (kind === 'token-bucket') return tokenBucket(options as Parameters<typeof tokenBucket>[0]);
  return gcra(options as Parameters<typeof gcra>[0]);
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2]!) as NodeConfig;
  const client = await connectChild(config);
  let store: SyncedStore | undefined;
  let limiter: Limiter | undefined;
  const run = async (command: Command): Promise<unknown> => {
    if (command.op === 'use') {
      await store?.shutdown();
      store = new SyncedStore({
        client,
        prefix: command.prefix,
        interval: 0,
        timeout: 10_000,
        breaker: false,
        onError: (event) => process.stderr.write(`sync error: ${String(event.error)}\n`),
      });
      limiter = new Limiter({ algorithm: algorithmOf(command.algorithm), store });
      return {};
    }
    if (store === undefined || limiter === undefined) throw new Error(`${command.op} before use`);
    if (command.op === 'sync') {
      await store.sync();
      if (store.outage) throw new Error('a sync failed');
      return {};
    }
    const allowed = command.keys.map(() => 0);
    for (let i = 0; i < command.n; i++) {
      if (command.serial) await store.sync();
      for (const [k, key] of command.keys.entries()) {
        if ((await limiter.check(key, { now: command.now })).allowed) allowed[k]!++;
      }
      if (command.serial) await store.sync();
    }
    return { allowed };
  };
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
  for await (const line of createInterface({ input: process.stdin })) {
    process.stdout.write(`${JSON.stringify(await run(JSON.parse(line) as Command))}\n`);
  }
  client.disconnect();
}

if (process.argv[2] !== undefined) await main();

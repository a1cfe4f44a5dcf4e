// One app process of a fleet, for fleet.test.ts: bundled from the sources (@sluice/* through the
// root tsconfig paths) by test/setup/node-script.ts and run from the repo root. It holds leases
// of one limiter on a shared Redis and obeys one JSON command per stdin line, answering one JSON line:
//
//   { "op": "acquire", "n": 10 }    n acquires at once; answers their decisions, keeps the admitted
//   { "op": "churn", "rounds": 50 } per round: release one held lease, then acquire one; answers
//                                   how many it holds, admitted and released
//   { "op": "exit" }
//
// argv: JSON `{ ports: number[], cluster: boolean, prefix: string, kind: 'concurrency' | 'fleet',
//               limit: number, time: 'client' | 'redis' }`

import { createInterface } from 'node:readline';
import { ConcurrencyLimiter, type Decision, FleetShedder, type Lease, type MaybePromise } from '@sluice/core';
import { RedisStore } from '@sluice/redis';
import { connectChild } from './child-node.js';

interface Config {
  ports: number[];
  cluster: boolean;
  prefix: string;
  kind: 'concurrency' | 'fleet';
  limit: number;
  time: 'client' | 'redis';
}

type Command = { op: 'acquire'; n: number } | { op: 'churn'; rounds: number } | { op: 'exit' };

const config = JSON.parse(process.argv[2]!) as Config;
const client = await connectChild(config);

// Fail closed with a long timeout: a slow answer must show up as a refusal, never as a
// fail-open admission that would break the budget.
const store = new RedisStore({
  client,
  prefix: config.prefix,
  time: config.time,
  timeout: 10_000,
  failurePolicy: 'deny',
  breaker: false,
  onError: (event) => process.stderr.write(`store error: ${String(event.error)}\n`),
});
const acquire: () => MaybePromise<Lease> =
  config.kind === 'concurrency'
    ? (() => {
        const limiter = new ConcurrencyLimiter({ limit: config.limit, store });
        return () => limiter.acquire('shared');
      })()
    : (() => {
        // Only low traffic: its ceiling (60 % of the budget) is the shared limit.
        const shedder = new FleetShedder({ budget: Math.ceil(config.limit / 0.6), store });
        if (shedder.ceilings[2] !== config.limit) throw new Error(`ceiling ${shedder.ceilings[2]}`);
        return () => shedder.acquire('low');
      })();

const held: Lease[] = [];
const summary = ({ allowed, remaining, reason }: Decision) => ({ allowed, remaining, reason });

async function run(command: Command): Promise<unknown> {
  switch (command.op) {
    case 'acquire': {
      const leases = await Promise.all(Array.from({ length: command.n }, () => acquire()));
      for (const lease of leases) if (lease.decision.allowed) held.push(lease);
      return { decisions: leases.map((lease) => summary(lease.decision)) };
    }
    case 'churn': {
      let admitted = 0;
      let released = 0;
      for (let round = 0; round < command.rounds; round++) {
        const lease = held.pop();
        if (lease !== undefined) {
          if (!(await lease.release())) throw new Error('a held lease was not held');
          released++;
        }
        const next = await acquire();
        if (next.decision.allowed) {
          held.push(next);
          admitted++;
        }
      }
      return { held: held.length, admitted, released };
    }
    case 'exit':
      client.disconnect();
      process.exit(0);
  }
}

process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
for await (const line of createInterface({ input: process.stdin })) {
  process.stdout.write(`${JSON.stringify(await run(JSON.parse(line) as Command))}\n`);
}

/**
 * The cost of the wrapper every Redis call goes through (`CallGate.map`: breaker, deadline,
 * `onError`), without Redis: an attempt that answers at once (an already settled promise), read
 * into a value, 32 callers in flight as in the Redis section. Beside it, the least code that does
 * the same without a deadline (`attempt().then(read)`): the difference is the wrapper's own cost.
 * Interleaved rounds, medians; ns per call.
 *
 * usage: node --import tsx src/redis/gate.ts [--ms=400] [--rounds=9]
 */

import { CallGate } from '../../../packages/core/src/gate/call-gate.js';
import type { RedisClient } from '../../../packages/redis/src/client.js';
import { resolveOptions } from '../../../packages/redis/src/options.js';
import { median } from '../lib/stats.js';

const args = process.argv.slice(2);
const arg = (name: string, fallback: string) =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const ms = Number(arg('ms', '400'));
const rounds = Number(arg('rounds', '9'));

// A client that is ready: the gate only reads its status and listens for 'ready'.
const client = {
  isCluster: false,
  status: 'ready',
  defineCommand() {},
  del: async () => 0,
  once() {},
  on() {},
  removeListener() {},
} as unknown as RedisClient;
const gate = new CallGate({
  ...resolveOptions({ client, timeout: 100 }),
  names: { store: 'RedisStore', backend: 'Redis' },
});
const reply = Promise.resolve([0, 1, 2]);
const attempt = () => reply;
const read = (r: number[]) => r.length;
const fail = () => -1;

const subjects: [string, () => Promise<number>][] = [
  ['attempt().then(read) (no deadline, no breaker)', () => attempt().then(read)],
  ['CallGate.map (deadline, breaker, report)', () => gate.map('consume', 1, attempt, read, fail)],
];

async function drive(op: () => Promise<number>): Promise<number> {
  let done = 0;
  const end = performance.now() + ms;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (performance.now() < end) {
        for (let i = 0; i < 64; i++) await op();
        done += 64;
      }
    }),
  );
  return ((performance.now() - start) * 1e6) / done;
}

const ns = subjects.map(() => [] as number[]);
for (const [, op] of subjects) await drive(op);
for (let r = 0; r < rounds; r++) for (const [i, [, op]] of subjects.entries()) ns[i]!.push(await drive(op));
for (const [i, [label]] of subjects.entries()) console.log(`${label}: ${median(ns[i]!).toFixed(0)} ns/call`);
console.log(`wrapper's own cost: ${(median(ns[1]!) - median(ns[0]!)).toFixed(0)} ns/call`);

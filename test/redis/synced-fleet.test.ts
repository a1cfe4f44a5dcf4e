import { fileURLToPath } from 'node:url';
import { fixedWindow, gcra, Limiter, MemoryStore, tokenBucket } from '@sluice/core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ChildNode } from './child-node.js';
import { uniquePrefix } from './clients.js';
import type { AlgorithmSpec, NodeConfig } from './synced-node.js';

// N node processes share one Redis, each with a SyncedStore; the test drives time and the sync
// cycles. A round is one sync interval: every node takes `q` requests per key at the round's
// instant (adversarial: every node is hammered at once, so each admits all its view allows), then
// every node syncs, in an order that rotates each round. The excess is what the fleet admits
// beyond what one exact store (a MemoryStore) admits for the same requests. The README's bound,
// in this model: the views lag by at most D = 2 rounds, in which a node admits at most 2q, so the
// excess is at most (N - 1) · min(L + r·D, 2q).

const SCRIPT = fileURLToPath(new URL('./synced-node.ts', import.meta.url));
const N = 3;
const TICK = 100; // ms of virtual time per round (the sync interval)
const ROUNDS = 20;
const START = 1_700_000_400_000 - (1_700_000_400_000 % 3_600_000);

interface Subject {
  readonly spec: AlgorithmSpec;
  /** L + r·D of the bound: what one node can admit unseen, at most. */
  readonly perNodeCap: number;
  /** Windows to measure admissions in (fixed window); undefined: the whole run. */
  readonly window?: number;
}

const subjects: readonly [string, Subject][] = [
  [
    'fixed window',
    {
      spec: { kind: 'fixed-window', limit: 60, window: 1000 },
      perNodeCap: 60,
      window: 1000,
    },
  ],
  [
    'token bucket',
    {
      spec: { kind: 'token-bucket', capacity: 30, refillAmount: 10, refillInterval: 1000 },
      perNodeCap: 30 + (10 * 2 * TICK) / 1000,
    },
  ],
  [
    'gcra',
    {
      spec: { kind: 'gcra', rate: 10, period: 1000, burst: 30 },
      perNodeCap: 30 + (10 * 2 * TICK) / 1000,
    },
  ],
];

/** What one trace admits on one exact store (a MemoryStore): the same requests, in the order the rounds give them. */
function reference(
  spec: AlgorithmSpec,
  q: number | 'serial',
  keys: readonly string[],
): Map<string, number[]> {
  const { kind, ...options } = spec;
  const algorithm =
    kind === 'fixed-window'
      ? fixedWindow(options as Parameters<typeof fixedWindow>[0])
      : kind === 'token-bucket'
        ? tokenBucket(options as Parameters<typeof tokenBucket>[0])
        : gcra(options as Parameters<typeof gcra>[0]);
  const limiter = new Limiter({ algorithm, store: new MemoryStore() });
  const out = new Map(keys.map((key) => [key, [] as number[]]));
  for (let round = 0; round < ROUNDS; round++) {
    const now = START + round * TICK;
    for (const key of keys) {
      let allowed = 0;
      for (let i = 0; i < N * (q === 'serial' ? 1 : q); i++) {
        if (limiter.checkSync(key, { now }).allowed) allowed++;
      }
      out.get(key)!.push(allowed);
    }
  }
  return out;
}

/** Runs the rounds on the fleet; returns per key the units admitted in each round. */
async function drive(nodes: readonly ChildNode[], q: number | 'serial', keys: readonly string[]) {
  const out = new Map(keys.map((key) => [key, [] as number[]]));
  const burst = (node: ChildNode, now: number) =>
    node
      .send<{ allowed: number[] }>({
        op: 'burst',
        keys,
        now,
        n: q === 'serial' ? 1 : q,
        serial: q === 'serial',
      })
      .then((reply) => reply.allowed);
  for (let round = 0; round < ROUNDS; round++) {
    const now = START + round * TICK;
    // The interval taken to zero ('serial'): one node after the other, each request with a sync
    // before and after it, so every request sees every earlier one.
    const replies =
      q === 'serial'
        ? await nodes.reduce<Promise<number[][]>>(
            async (done, node) => [...(await done), await burst(node, now)],
            Promise.resolve([]),
          )
        : await Promise.all(nodes.map((node) => burst(node, now)));
    keys.forEach((key, k) => {
      out.get(key)!.push(replies.reduce((sum, reply) => sum + reply[k]!, 0));
    });
    if (q !== 'serial') for (let i = 0; i < N; i++) await nodes[(round + i) % N]!.send({ op: 'sync' });
  }
  return out;
}

/** Admitted units per measured span: per window for a fixed window, the whole run otherwise. */
function spans(perRound: readonly number[], subject: Subject): number[] {
  const perSpan = subject.window === undefined ? ROUNDS : subject.window / TICK;
  const out: number[] = [];
  for (let i = 0; i < perRound.length; i += perSpan) {
    out.push(perRound.slice(i, i + perSpan).reduce((a, b) => a + b, 0));
  }
  return out;
}

const backends: readonly [string, boolean][] = [
  ['standalone', false],
  ['Cluster', true],
];

describe.each(backends)('the over-admission bound, %s: N node processes, one Redis', (_name, cluster) => {
  // N processes for the whole file (a start costs most of a second of CPU): each run below
  // gives every node a new, empty SyncedStore under a new prefix (`use`), as a fresh start would.
  let nodes: ChildNode[] = [];
  beforeAll(async () => {
    const ports = cluster ? inject('redisClusterPorts') : [inject('redisPort')];
    const config: NodeConfig = { ports, cluster };
    nodes = await Promise.all(Array.from({ length: N }, () => ChildNode.start(SCRIPT, config)));
  });
  afterAll(() => {
    for (const node of nodes) node.stop();
  });

  it.each(subjects)(
    '%s: measured excess within (N-1)·min(L + r·D, ρ·D); exact when the interval goes to zero',
    async (_label, subject) => {
      // Two keys: on a Cluster they live in different hash slots (one script per slot per cycle).
      const keys = ['user:{a}', 'user:{b}'];
      const excess: number[] = [];
      for (const q of [12, 4, 'serial'] as const) {
        const prefix = uniquePrefix('bound');
        await Promise.all(nodes.map((node) => node.send({ op: 'use', prefix, algorithm: subject.spec })));
        const fleet = await drive(nodes, q, keys);
        const exact = reference(subject.spec, q, keys);
        const rho = q === 'serial' ? 0 : 2 * q; // units one node admits in D = 2 rounds
        const bound = (N - 1) * Math.min(subject.perNodeCap, rho);
        let most = 0;
        for (const key of keys) {
          const measured = spans(fleet.get(key)!, subject);
          const ideal = spans(exact.get(key)!, subject);
          measured.forEach((admitted, i) => {
            const over = admitted - ideal[i]!;
            most = Math.max(most, over);
            expect(over, `${key}, q=${q}, span ${i}: admitted ${admitted}`).toBeLessThanOrEqual(bound);
            // Never fewer than one exact store admits for the same requests (no under-admission
            // under sustained demand).
            expect(admitted).toBeGreaterThanOrEqual(ideal[i]!);
          });
        }
        if (q === 'serial') {
          // The interval at zero: exactly what one exact store admits.
          for (const key of keys) expect(fleet.get(key)).toEqual(exact.get(key));
        }
        excess.push(most);
        // The figures the README quotes: measured excess against the bound, per interval.
        console.info(
          `${_label}, ${cluster ? 'Cluster' : 'standalone'}, q=${q}: excess ${most}, bound ${bound}`,
        );
      }
      // The mode does over-admit at a long interval, and the excess shrinks with the interval.
      expect(excess[0]).toBeGreaterThan(0);
      for (let i = 1; i < excess.length; i++) expect(excess[i]).toBeLessThanOrEqual(excess[i - 1]!);
      expect(excess.at(-1)).toBe(0);
    },
    120_000,
  );
});

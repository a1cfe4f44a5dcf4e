import { randomBytes } from 'node:crypto';
import type { Algorithm, Decision, LimitCall, Store } from '@sluice/core';
import { batchStep, chargeStep, UNCHANGED, withFields } from '@sluice/core/adapter';
import type { BreakerState } from '@sluice/core/gate';
import { CallGate, formatShare } from '@sluice/core/gate';
import { watchClusterNodes } from './cluster-nodes.js';
import { answeredBy } from './reply-error.js';
import { type ScriptCommand, scriptCommand } from './script-command.js';
import { RESET_SCRIPT } from './scripts/reset-script.js';
import { SYNC_SCRIPT } from './scripts/sync-script.js';
import { ExactPath } from './synced/exact-path.js';
import { type Entry, LocalTable } from './synced/local-table.js';
import { assertNoBlocks } from './synced/no-blocks.js';
import {
  type ResolvedSyncedOptions,
  resolveSyncedOptions,
  type SyncedStoreOptions,
} from './synced/options.js';
import { SyncLoop } from './synced/sync-loop.js';
import { SyncQueue } from './synced/sync-queue.js';

const SYNC_COMMAND = 'sluiceSync';
/** RedisStore's name for the same script: a client shared by both stores registers it once. */
const RESET_COMMAND = 'sluiceReset';

/**
 * Local-first limits synced to Redis. Every decision is made in this process, against its local
 * view of the key (no I/O on the request path); every `interval` one sync cycle sends what this
 * node consumed on each key it used (one script per cycle, one per hash slot on a Cluster) and
 * brings back the fleet's state, so the nodes converge. The fleet may admit more than the limit
 * by a stated bound (README: "Local-first, synced"), never by more. Fixed window, sliding window
 * counter, continuous token bucket and GCRA; the others are refused with `ERR_SLUICE_UNSUPPORTED`.
 *
 * This file is the local decisions; the keys are in `LocalTable`, what the next cycle sends in
 * `SyncQueue`, the cycles in `SyncLoop`, decisions near the limit in `ExactPath`.
 *
 * @example
 * const client = new Redis({ enableOfflineQueue: false });
 * const limiter = new Limiter({
 *   algorithm: gcra({ rate: 100, period: '1s' }),
 *   store: new SyncedStore({ client, interval: '100ms' }),
 * });
 */
export class SyncedStore implements Store {
  readonly prefix: string;
  private readonly options: ResolvedSyncedOptions;
  private readonly gate: CallGate;
  private readonly resetCommand: ScriptCommand<number>;
  private readonly table: LocalTable;
  private readonly queue: SyncQueue;
  private readonly loop: SyncLoop;
  private readonly exactPath: ExactPath;
  private closed = false;
  /** The store's clock (`options.clock`, else `Date.now`), read on every decision. */
  private readonly clock: () => number;
  private readonly exactAbove: number | undefined;

  constructor(options: SyncedStoreOptions) {
    this.options = resolveSyncedOptions(options);
    this.clock = this.options.redis.clock;
    this.exactAbove = this.options.exactAbove;
    const { client, prefix } = this.options.redis;
    this.prefix = prefix;
    watchClusterNodes(client);
    const share = this.options.outageShare;
    this.gate = new CallGate({
      ...this.options.redis,
      names: { store: 'SyncedStore', backend: 'Redis' },
      backendAnswered: answeredBy(client),
      policyText: `this process's view (${share === 1 ? 'the same limits' : `${formatShare(share)} of each limit`}; synced again when Redis answers)`,
    });
    this.resetCommand = scriptCommand(client, RESET_COMMAND, RESET_SCRIPT);
    this.table = new LocalTable(this.options.maxKeys, prefix, client.isCluster);
    this.queue = new SyncQueue(this.options.maxKeys, this.table, this.gate);
    this.loop = new SyncLoop(
      this.options.interval,
      this.queue,
      this.gate,
      scriptCommand(client, SYNC_COMMAND, SYNC_SCRIPT),
      this.clock,
      `${prefix}sync-ack:${randomBytes(8).toString('hex')}:`,
      client.isCluster,
    );
    this.exactPath = new ExactPath(this.options, this.gate, this.loop, this.queue);
  }

  /** The circuit breaker's state (`'closed'` when there is no breaker). */
  get breakerState(): BreakerState {
    return this.gate.state;
  }

  /** True while the last sync failed: decisions then use `outageShare` of each limit. */
  get outage(): boolean {
    return this.loop.outage;
  }

  /** Keys whose use waits for the next sync (at most `2 × maxKeys`). */
  get pending(): number {
    return this.queue.length;
  }

  /** Keys held in this process. */
  get keyCount(): number {
    return this.table.size;
  }

  /** The local view of one key (the algorithm's state), for tests and debugging. */
  inspect(algorithm: Algorithm, key: string): unknown {
    return this.table.existing(algorithm, key)?.view;
  }

  consume(calls: readonly LimitCall[], now: number | undefined): Decision[] | Promise<Decision[]> {
    assertNoBlocks(calls);
    if (calls.length === 1) {
      const call = calls[0]!;
      const decision = this.consumeOne(call.algorithm, call.key, call.cost, call.policy, now);
      return decision instanceof Promise ? decision.then((d) => [d]) : [decision];
    }
    const at = now ?? this.clock();
    this.loop.latest = at;
    const share = this.outage ? this.options.outageShare : 1;
    const entries = calls.map((call) => this.entry(call.algorithm, call.key));
    const scaled = share === 1 ? calls : calls.map((call) => ({ ...call, cost: call.cost / share }));
    const { decisions, writes } = batchStep(
      scaled,
      entries.map((entry) => entry.view),
      at,
    );
    entries.forEach((entry, i) => {
      const next = writes[i];
      if (next === UNCHANGED) return;
      entry.view = next;
      // Written and admitted: the batch admitted (a refusing shadow limit does not veto it).
      if (decisions[i]!.allowed) entry.delta = entry.space.rule.add(entry.delta, next, at, calls[i]!.cost);
    });
    return share === 1 ? decisions : decisions.map(floorRemaining);
  }

  /** One call, without the batch's arrays (`Store.consumeOne`): the Limiter's direct path. */
  consumeOne(
    algorithm: Algorithm,
    key: string,
    cost: number,
    policy: string,
    now: number | undefined,
  ): Decision | Promise<Decision> {
    const at = now ?? this.clock();
    this.loop.latest = at;
    const entry = this.entry(algorithm, key);
    if (this.loop.outage) return this.outageOne(entry, cost, policy, at);
    const step = algorithm.consume(entry.view, at, cost, policy);
    const decision = step.decision;
    if (!decision.allowed) return decision;
    const exact = this.exactAbove;
    if (exact !== undefined && decision.remaining < (1 - exact) * decision.limit) {
      return this.exactPath.decide(entry, { algorithm, key, cost, policy }, at, now);
    }
    entry.view = step.state;
    entry.delta = entry.space.rule.add(entry.delta, step.state, at, cost);
    return decision;
  }

  /** A decision while Redis is away: against `outageShare` of the limit (the cost scaled up). */
  private outageOne(entry: Entry, cost: number, policy: string, at: number): Decision {
    const step = entry.space.algorithm.consume(entry.view, at, cost / this.options.outageShare, policy);
    if (step.decision.allowed) {
      entry.view = step.state;
      entry.delta = entry.space.rule.add(entry.delta, step.state, at, cost);
    }
    return floorRemaining(step.decision);
  }

  peek(calls: readonly LimitCall[], now: number | undefined): Decision[] {
    const at = now ?? this.clock();
    return calls.map((call) => {
      const entry = this.entry(call.algorithm, call.key);
      return call.algorithm.peek(entry.view, at, call.cost, call.policy);
    });
  }

  /**
   * Gives back units admitted earlier (`Store.refund`: a held request whose client left, a
   * response that `count` does not count, `settle` downwards): off the local view at once, and
   * off the fleet's state at the next sync (counts never below zero, a clock never past a full
   * limit). A key this node no longer holds has nothing to give back here.
   */
  refund(calls: readonly LimitCall[], now: number | undefined): void {
    const at = now ?? this.clock();
    const share = this.outage ? this.options.outageShare : 1;
    for (const call of calls) {
      const { algorithm } = call;
      if (algorithm.refund === undefined) continue;
      const entry = this.table.existing(algorithm, call.key);
      if (entry === undefined || entry.view === undefined) continue;
      // In an outage an admission takes `cost / outageShare` from the view (and sends `cost`), so
      // a refund gives the view that much back: a login that succeeds must not lock its user out
      // under `count: 'failed'`. The fleet gets back what was sent, `cost`.
      const next = algorithm.refund(entry.view, at, call.cost / share);
      if (next === entry.view) continue;
      entry.delta = entry.space.rule.refund(entry.delta, entry.view, next, at, call.cost, share);
      entry.view = next;
      this.loop.latest = at;
      this.queue.add(entry);
    }
  }

  /**
   * Takes up to each call's cost without refusing (`Store.charge`: `settle` upwards, a plan
   * change), as far as this node's view has room; the units taken reach the fleet at the next
   * sync, as admissions do (so the fleet-wide excess bound covers them too). During an outage it
   * takes against the whole limit, not `outageShare` of it: a charge never refuses, so a share
   * would only change how much of the actual cost goes uncounted.
   */
  charge(calls: readonly LimitCall[], now: number | undefined): number[] {
    const at = now ?? this.clock();
    this.loop.latest = at;
    return calls.map((call) => {
      const entry = this.entry(call.algorithm, call.key);
      const { state, taken } = chargeStep(call, entry.view, at);
      if (state === UNCHANGED || taken <= 0) return 0;
      entry.view = state;
      entry.delta = entry.space.rule.add(entry.delta, state, at, taken);
      return taken;
    });
  }

  /** Forgets the keys here and deletes them in Redis. Rejects with `ERR_SLUICE_STORE_FAILURE` when Redis fails. */
  async reset(calls: readonly Pick<LimitCall, 'algorithm' | 'key'>[]): Promise<void> {
    if (calls.length === 0) return;
    const entries = calls.map((call) => this.entry(call.algorithm, call.key));
    for (const entry of entries) {
      entry.view = undefined;
      entry.delta = undefined;
      this.table.remove(entry);
    }
    // One reset script per user key, deleting these limits' fields (as RedisStore.reset does).
    const fields = new Map<string, string[]>();
    for (const entry of entries) {
      const list = fields.get(entry.redisKey) ?? [];
      list.push(entry.space.field);
      fields.set(entry.redisKey, list);
    }
    await this.gate.strict('reset', calls.length, () =>
      Promise.all([...fields].map(([key, list]) => this.resetCommand(1, key, ...list))),
    );
  }

  /** One sync cycle now (see `SyncLoop.sync`). Never rejects. */
  sync(): Promise<void> {
    return this.loop.sync();
  }

  /**
   * Stops the timer and flushes: at most three cycles (the one in flight, a lost batch sent
   * again, then what is left), each bounded by `timeout`. Then forgets every key. The client is the caller's to close.
   */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.loop.stop();
    await this.loop.sync();
    if (this.loop.unsent) await this.loop.sync();
    this.table.clear();
    this.queue.clear();
    await this.exactPath.shutdown();
  }

  /** The entry of a key, made if new; queued for the next sync (a key in use is kept fresh). */
  private entry(algorithm: Algorithm, key: string): Entry {
    const entry = this.table.entry(algorithm, key);
    this.queue.add(entry);
    return entry;
  }
}

/** A decision made with a scaled cost (an outage) reports whole units. */
function floorRemaining(decision: Decision): Decision {
  return withFields(decision, { remaining: Math.floor(decision.remaining) });
}

import { randomBytes } from 'node:crypto';
import { type Algorithm, type Decision, ErrorCode, SluiceError, type Store } from '@sluice/core';
import { chargeStep, type LimitCall, settleBatch, UNCHANGED } from '@sluice/core/adapter';
import type { BreakerState } from './breaker.js';
import { CallGate } from './call-gate.js';
import { watchClusterNodes } from './cluster-nodes.js';
import { formatShare } from './failure-log.js';
import { escapeKey } from './key-escape.js';
import { RedisStore } from './redis-store.js';
import { type ScriptCommand, scriptCommand } from './script-command.js';
import { RESET_SCRIPT } from './scripts/reset-script.js';
import { SYNC_SCRIPT } from './scripts/sync-script.js';
import { hashSlot } from './slot.js';
import { type Entry, LocalTable, type Space } from './synced/local-table.js';
import { mergeRule } from './synced/merge-rules.js';
import {
  type ResolvedSyncedOptions,
  resolveSyncedOptions,
  type SyncedStoreOptions,
} from './synced/options.js';
import { applyReply, buildBatch, type SyncGroup } from './synced/sync-batch.js';

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
  private readonly command: ScriptCommand;
  private readonly resetCommand: ScriptCommand<number>;
  private readonly table: LocalTable;
  private readonly spaces = new Map<string, Space>();
  private lastAlgorithm: Algorithm | undefined;
  private lastSpace: Space | undefined;
  private readonly cluster: boolean;
  /** The node's ack key (a hash tag follows it on a Cluster). */
  private readonly ackBase: string;
  private queued: Entry[] = [];
  /** Groups whose reply was lost: sent again, with their number, before anything new. */
  private resend: SyncGroup[] = [];
  private seq = 0;
  /**
   * The time of the latest decision: a batch's keys expire relative to it, so states written at
   * a caller's `now` (replays, tests) live their life in that time, not in the clock's.
   */
  private latest: number | undefined;
  private running: Promise<void> | undefined;
  private following: Promise<void> | undefined;
  private readonly timer: ReturnType<typeof setInterval> | undefined;
  private exactStore: RedisStore | undefined;
  private closed = false;
  /** Evicted keys whose unsent units were dropped since the last report (`reportDropped`). */
  private dropped = 0;
  /** The store's clock (`options.clock`, else `Date.now`), read on every decision. */
  private readonly clock: () => number;
  private readonly exactAbove: number | undefined;

  constructor(options: SyncedStoreOptions) {
    this.options = resolveSyncedOptions(options);
    this.clock = this.options.redis.clock;
    this.exactAbove = this.options.exactAbove;
    const { client, prefix } = this.options.redis;
    this.prefix = prefix;
    this.cluster = client.isCluster;
    watchClusterNodes(client);
    const share = this.options.outageShare;
    this.gate = new CallGate({
      ...this.options.redis,
      names: { store: 'SyncedStore', backend: 'Redis' },
      policyText: `this process's view (${share === 1 ? 'the same limits' : `${formatShare(share)} of each limit`}; synced again when Redis answers)`,
    });
    this.command = scriptCommand(client, SYNC_COMMAND, SYNC_SCRIPT);
    this.resetCommand = scriptCommand(client, RESET_COMMAND, RESET_SCRIPT);
    this.table = new LocalTable(this.options.maxKeys);
    this.ackBase = `${prefix}sync-ack:${randomBytes(8).toString('hex')}:`;
    if (this.options.interval > 0) {
      this.timer = setInterval(() => {
        if (this.running === undefined) void this.sync();
      }, this.options.interval);
      this.timer.unref?.();
    }
  }

  /** The circuit breaker's state (`'closed'` when there is no breaker). */
  get breakerState(): BreakerState {
    return this.gate.state;
  }

  /** True while the last sync failed: decisions then use `outageShare` of each limit. */
  get outage(): boolean {
    return this.resend.length > 0;
  }

  /** Keys whose use waits for the next sync (at most `2 × maxKeys`). */
  get pending(): number {
    return this.queued.length;
  }

  /** Keys held in this process. */
  get keyCount(): number {
    return this.table.size;
  }

  /** The local view of one key (the algorithm's state), for tests and debugging. */
  inspect(algorithm: Algorithm, key: string): unknown {
    return this.spaces.get(algorithm.fingerprint)?.entries.get(key)?.view;
  }

  consume(calls: readonly LimitCall[], now: number | undefined): Decision[] | Promise<Decision[]> {
    assertNoBlocks(calls);
    if (calls.length === 1) {
      const call = calls[0]!;
      const decision = this.consumeOne(call.algorithm, call.key, call.cost, call.policy, now);
      return decision instanceof Promise ? decision.then((d) => [d]) : [decision];
    }
    const at = now ?? this.clock();
    this.latest = at;
    const share = this.outage ? this.options.outageShare : 1;
    const entries = calls.map((call) => this.entry(call.algorithm, call.key));
    const scaled = share === 1 ? calls : calls.map((call) => ({ ...call, cost: call.cost / share }));
    const { decisions, writes } = settleBatch(
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
    this.latest = at;
    const entry = this.entry(algorithm, key);
    if (this.resend.length > 0) return this.outageOne(entry, cost, policy, at);
    const step = algorithm.consume(entry.view, at, cost, policy);
    const decision = step.decision;
    if (!decision.allowed) return decision;
    const exact = this.exactAbove;
    if (exact !== undefined && decision.remaining < (1 - exact) * decision.limit) {
      return this.exact(entry, { algorithm, key, cost, policy }, at, now);
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
      const entry = this.held(algorithm, call.key);
      if (entry === undefined || entry.view === undefined) continue;
      // In an outage an admission takes `cost / outageShare` from the view (and sends `cost`), so
      // a refund gives the view that much back: a login that succeeds must not lock its user out
      // under `count: 'failed'`. The fleet gets back what was sent, `cost`.
      const next = algorithm.refund(entry.view, at, call.cost / share);
      if (next === entry.view) continue;
      entry.delta = entry.space.rule.refund(entry.delta, entry.view, next, at, call.cost, share);
      entry.view = next;
      this.latest = at;
      this.queue(entry);
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
    this.latest = at;
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

  /**
   * One sync cycle: sends what this node consumed since the last one (or, after a failure, the
   * lost batch again) and reads the fleet's state back, for the keys used in the last two cycles
   * (a key idle longer is pulled by the cycle after its next use). Never rejects: a failure is reported to
   * `onError` (`operation: 'sync'`) and the batch is sent again next cycle. A call while a cycle
   * runs waits for the next one (shared by every caller meanwhile), so what was consumed before
   * the call is sent by the time it resolves, if Redis answers.
   */
  sync(): Promise<void> {
    if (this.following !== undefined) return this.following;
    if (this.running === undefined) return this.start();
    const following = this.running.then(() => {
      this.following = undefined;
      return this.start();
    });
    this.following = following;
    return following;
  }

  /**
   * Stops the timer and flushes: at most three cycles (the one in flight, a lost batch sent
   * again, then what is left), each bounded by `timeout`. Then forgets every key. The client is the caller's to close.
   */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.sync();
    if (this.resend.length > 0 || this.queued.length > 0) await this.sync();
    this.table.clear(this.spaces.values());
    this.queued = [];
    await this.exactStore?.shutdown();
  }

  private start(): Promise<void> {
    const running = this.cycle().finally(() => {
      this.running = undefined;
    });
    this.running = running;
    return running;
  }

  private async cycle(): Promise<void> {
    this.reportDropped();
    let groups = this.resend;
    if (groups.length === 0) {
      if (this.queued.length === 0) return;
      const queued = this.queued;
      this.queued = [];
      const at = this.latest ?? this.clock();
      groups = buildBatch(queued, this.requeue, ++this.seq, at, this.ackBase, this.cluster);
    }
    const lost: SyncGroup[] = [];
    await Promise.all(
      groups.map((group) =>
        this.gate.map(
          'sync',
          group.entries.length,
          () => this.command(group.keys.length, ...group.keys, ...group.args),
          (reply) => applyReply(group, reply),
          () => {
            lost.push(group);
          },
        ),
      ),
    );
    this.resend = lost;
    // Entries used meanwhile were queued again if they were not already in this batch.
    if (lost.length > 0) for (const group of lost) for (const entry of group.entries) this.queue(entry);
  }

  /**
   * A decision near the limit, made in Redis: a sync (this key's consumption reaches Redis), then
   * `RedisStore`'s script on the same key. If Redis fails, the local view decides.
   */
  private async exact(entry: Entry, call: LimitCall, at: number, now: number | undefined): Promise<Decision> {
    await this.sync();
    const { client, clock, timeout, readyTimeout } = this.options.redis;
    // The store's own bounds and report (this store's onError and log): an exact decision waits
    // no longer than a sync would.
    this.exactStore ??= new RedisStore({
      client,
      prefix: this.prefix,
      clock,
      timeout,
      readyTimeout,
      onError: (event) => this.gate.report(event.operation, event.keys, event.error),
      logger: false,
      failurePolicy: 'deny',
      breaker: false,
    });
    const [decision] = await this.exactStore.consume([call], now);
    const step = call.algorithm.consume(entry.view, at, call.cost, call.policy);
    if (decision!.reason === 'store-unavailable') {
      if (step.decision.allowed) {
        entry.view = step.state;
        entry.delta = entry.space.rule.add(entry.delta, step.state, at, call.cost);
        this.queue(entry);
      }
      return step.decision;
    }
    // Redis counted it: the view takes it (it is not sent again).
    if (decision!.allowed && step.decision.allowed) entry.view = step.state;
    return decision!;
  }

  /** The entry of a key, made if new; queued for the next sync (a key in use is kept fresh). */
  private entry(algorithm: Algorithm, key: string): Entry {
    const space = algorithm === this.lastAlgorithm ? this.lastSpace! : this.space(algorithm);
    let entry = space.entries.get(key);
    if (entry === undefined) {
      const redisKey = `${this.prefix}{${escapeKey(key)}}`;
      entry = {
        space,
        key,
        redisKey,
        slot: this.cluster ? hashSlot(redisKey) : 0,
        view: undefined,
        delta: undefined,
        queued: false,
        pulls: 0,
        generation: 0,
      };
      this.table.add(entry);
    } else {
      this.table.use(entry);
    }
    this.queue(entry);
    return entry;
  }

  /** The entry of a key this node holds, or undefined (nothing is made). */
  private held(algorithm: Algorithm, key: string): Entry | undefined {
    return this.spaces.get(algorithm.fingerprint)?.entries.get(key);
  }

  /** Puts a used entry in the next batch, and the one after (see `Entry.pulls`). */
  private queue(entry: Entry): void {
    entry.pulls = 2;
    if (entry.queued) return;
    entry.queued = true;
    if (this.queued.length >= 2 * this.options.maxKeys) this.dropEvicted();
    this.queued.push(entry);
  }

  /**
   * Bounds the queue: an evicted key's unsent consumption waits in it for the next sync, so while
   * no sync runs (Redis away, or more new keys between two cycles than `maxKeys`) the queue would
   * grow with every new key. Past `2 × maxKeys` the evicted keys' consumption is dropped, and
   * reported by the next cycle (`operation: 'sync'`, `keys`: how many since the last report): the fleet never learns of it, so it may admit
   * that much more than the bound says. The keys still held (at most `maxKeys`) stay queued.
   */
  private dropEvicted(): void {
    const kept: Entry[] = [];
    let dropped = 0;
    for (const entry of this.queued) {
      if (entry.space.entries.get(entry.key) === entry) kept.push(entry);
      else {
        // Only unsent units are lost: a key only read (peek), or whose units wait in a lost batch
        // (sent again as it is), loses nothing.
        if (entry.delta !== undefined) dropped++;
        entry.queued = false;
        entry.delta = undefined;
      }
    }
    this.queued = kept;
    this.dropped += dropped;
  }

  /** Reports the keys `dropEvicted` dropped since the last report: once per cycle, off the request path. */
  private reportDropped(): void {
    const dropped = this.dropped;
    if (dropped === 0) return;
    this.dropped = 0;
    this.gate.report(
      'sync',
      dropped,
      new SluiceError(
        ErrorCode.STORE_FAILURE,
        `SyncedStore: the unsent consumption of ${dropped} evicted keys was dropped (more than maxKeys ${this.options.maxKeys} keys used since the last sync that reached Redis)`,
      ),
    );
  }

  private readonly requeue = (entry: Entry): void => {
    if (entry.queued) return;
    entry.queued = true;
    this.queued.push(entry);
  };

  private space(algorithm: Algorithm): Space {
    let space = this.spaces.get(algorithm.fingerprint);
    if (space === undefined) {
      space = {
        algorithm,
        rule: mergeRule(algorithm),
        field: algorithm.fingerprint,
        entries: new Map(),
      };
      this.spaces.set(algorithm.fingerprint, space);
    }
    this.lastAlgorithm = algorithm;
    this.lastSpace = space;
    return space;
  }
}

/**
 * A block is one key's refusal for a while after it went over its limit: each node would block on
 * its own view, at its own time, and the fleet would not agree on it. Refused, coded, rather than
 * answered as a plain limit that never blocks.
 */
function assertNoBlocks(calls: readonly LimitCall[]): void {
  for (const call of calls) {
    if (call.block !== undefined) {
      throw new SluiceError(
        ErrorCode.UNSUPPORTED,
        `SyncedStore does not support block on limit ${JSON.stringify(call.policy)}; use RedisStore or MemoryStore for it`,
        { option: 'block', value: call.policy },
      );
    }
  }
}

/** A decision made with a scaled cost (an outage) reports whole units. */
function floorRemaining(decision: Decision): Decision {
  return { ...decision, remaining: Math.floor(decision.remaining) };
}

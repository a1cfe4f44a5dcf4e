import type { Algorithm, Decision, LimitCall, Store } from '@sluice/core';
import type { BreakerState, CallGate, FailureAnswers } from '@sluice/core/gate';
import { remoteCalls } from '@sluice/core/gate';
import { slotOwner } from './client.js';
import { watchClusterNodes } from './cluster-nodes.js';
import {
  CLUSTER_DOWN_RETRY_WARNING,
  clusterDownRetryWarning,
  RETRY_DELAY_WARNING,
  retryDelayWarning,
  warn,
} from './cluster-options.js';
import { ClusterSplit, groupBySlot, type SlotGroup } from './cluster-split.js';
import { DenyCache } from './deny-cache.js';
import { escapeKey } from './key-escape.js';
import { type RedisStoreOptions, type ResolvedOptions, resolveOptions } from './options.js';
import { RedisLeases } from './redis-leases.js';
import { answeredBy } from './reply-error.js';
import { nowArg, type ScriptCommand } from './script-command.js';
import { type LeanBatchNode, leanChild, ScriptRegistry } from './script-registry.js';
import { hashSlot } from './slot.js';
import { blockField, callArgs, pushCallArgs, readBatchDecisions, readSingleDecision } from './wire.js';

type Mode = 'consume' | 'peek';

/**
 * Limit state in Redis: every algorithm runs as a Lua twin of its TypeScript reference, one round
 * trip per decision including layered limits (all-or-nothing inside one script). On a Cluster,
 * limits whose keys share a slot still take one script; limits across slots are evaluated per slot
 * and what a refused request consumed in the other slots is refunded (see the README for the exact
 * guarantee).
 * Every call is bounded by `timeout`; failures go to the failure policy, never to the caller.
 * Also implements the optional parts of the contract: `leases` (concurrency leases, see
 * {@link RedisLeases}) and `refund` (a held leaky-bucket-queue slot given back).
 *
 * The store coordinates: which script runs a call ({@link ScriptRegistry}), limits across Cluster
 * slots ({@link ClusterSplit}), the breaker and deadline of every call ({@link CallGate}), what the
 * failure policy answers ({@link FailureAnswers}), and local refusals ({@link DenyCache}).
 *
 * @example
 * const client = new Redis({ enableOfflineQueue: false });
 * const limiter = new Limiter({
 *   algorithm: gcra({ rate: 10, period: '1s' }),
 *   store: new RedisStore({ client }), // while Redis is away, the same limits in this process
 * });
 */
export class RedisStore implements Store {
  readonly prefix: string;
  /**
   * Concurrency leases in Redis, for `ConcurrencyLimiter` and `FleetShedder`: fleet-wide when the
   * processes share this Redis. Same timeout, breaker and failure policy as limits.
   */
  readonly leases: RedisLeases;
  private readonly options: ResolvedOptions;
  private readonly isCluster: boolean;
  private readonly scripts: ScriptRegistry;
  private readonly gate: CallGate;
  private readonly failure: FailureAnswers;
  private readonly split: ClusterSplit;
  private readonly denied: DenyCache | undefined;
  private localRefusals = 0;

  constructor(options: RedisStoreOptions) {
    this.options = resolveOptions(options);
    const { client } = this.options;
    this.prefix = this.options.prefix;
    this.isCluster = client.isCluster;
    watchClusterNodes(client);
    this.scripts = new ScriptRegistry(client);
    const calls = remoteCalls({
      ...this.options,
      names: { store: 'RedisStore', backend: 'Redis' },
      owner: slotOwner(client),
      backendAnswered: answeredBy(client),
    });
    this.gate = calls.gate;
    const warning = retryDelayWarning(client, this.options.timeout);
    if (warning !== undefined) warn(this.options.logger, RETRY_DELAY_WARNING, warning);
    const downRetry = clusterDownRetryWarning(client, this.options.timeout);
    if (downRetry !== undefined) warn(this.options.logger, CLUSTER_DOWN_RETRY_WARNING, downRetry);
    this.failure = calls.answers;
    this.split = new ClusterSplit(this.gate, this.scripts.splitRefund);
    this.leases = new RedisLeases(this.options, this.gate, calls.leases);
    this.denied = this.options.denyCache > 0 ? new DenyCache(this.options.denyCache) : undefined;
  }

  /** The circuit breaker's state (`'closed'` when there is no breaker). */
  get breakerState(): BreakerState {
    return this.gate.state;
  }

  /** Requests the deny cache refused without a round trip since the store was made (for metrics). */
  get denyCacheHits(): number {
    return this.localRefusals;
  }

  /**
   * The Redis key holding the state of `key`: a hash, `<prefix>{<key, escaped>}`, with one field
   * per limit on that key ({@link fieldFor}): `redis-cli hgetall` shows them. `algorithm` is
   * unused since 0.x's hash layout (kept so that callers need no change).
   */
  keyFor(_algorithm: Algorithm | undefined, key: string): string {
    return `${this.prefix}{${escapeKey(key)}}`;
  }

  /** The field of `algorithm`'s state in the hash of a user key ({@link keyFor}): its fingerprint. */
  fieldFor(algorithm: Algorithm): string {
    return algorithm.fingerprint;
  }

  consume(calls: readonly LimitCall[], now: number | undefined): Promise<Decision[]> {
    if (this.denied !== undefined) {
      const local = this.denied.refuse(calls, now ?? this.options.clock());
      if (local !== undefined) {
        this.localRefusals++;
        return Promise.resolve(local);
      }
    }
    return this.decide(calls, now, 'consume');
  }

  peek(calls: readonly LimitCall[], now: number | undefined): Promise<Decision[]> {
    return this.decide(calls, now, 'peek');
  }

  /** Deletes the limits' fields (and forgets local refusals). Rejects with `ERR_SLUICE_STORE_FAILURE` when Redis fails. */
  async reset(calls: readonly Pick<LimitCall, 'algorithm' | 'key'>[]): Promise<void> {
    for (const call of calls) this.denied?.forget(call);
    await this.options.fallback?.reset(calls);
    if (calls.length === 0) return;
    // One script per user key (a Cluster routes each to its slot's node), deleting its limits' fields.
    const fields = new Map<string, string[]>();
    for (const call of calls) {
      const key = this.keyFor(call.algorithm, call.key);
      const list = fields.get(key);
      // The limit's block record too: a reset client starts with no block and no streak.
      const own = [call.algorithm.fingerprint, blockField(call.algorithm.fingerprint)];
      if (list === undefined) fields.set(key, own);
      else list.push(...own);
    }
    await this.gate.strict('reset', calls.length, () =>
      Promise.all([...fields].map(([key, list]) => this.scripts.reset(1, key, ...list))),
    );
  }

  /**
   * Gives back the units of calls admitted with a delay whose request never ran (a client that
   * disconnected while held): `Algorithm.refund` in Lua (every built-in kind has its twin), one
   * round trip per hash slot. Calls whose algorithm has no `refund` are ignored. Never rejects: a failure is reported to
   * `onError` (`operation: 'refund'`) and the slot drains with the queue. While Redis is
   * unavailable, the fallback store (when that is the policy) is refunded instead, since it took
   * the consumption then. Also forgets the local refusals of those keys (they may fit now).
   */
  async refund(calls: readonly LimitCall[], now: number | undefined): Promise<void> {
    const refundable = calls.filter((call) => call.algorithm.refund !== undefined);
    await this.perSlot('refund', this.scripts.refund, refundable, now, (mine) =>
      this.failure.refund(mine, now),
    );
  }

  /**
   * Takes up to each call's cost from its limit, never below zero ({@link CHARGE_SCRIPT}, the twin
   * of `chargeStep`): settling a reservation upwards, or carrying a client's consumption to a new
   * plan. One round trip per hash slot. Never rejects: a failure is reported to `onError`
   * (`operation: 'charge'`) and nothing is taken; while Redis is unavailable the fallback store
   * (when that is the policy) is charged instead. Answers the units each call took.
   */
  async charge(calls: readonly LimitCall[], now: number | undefined): Promise<number[]> {
    const taken = calls.map(() => 0);
    await this.perSlot(
      'charge',
      this.scripts.charge,
      calls,
      now,
      async (mine, indices) => {
        const units = await this.failure.charge(mine, now);
        units?.forEach((n, j) => {
          taken[indices[j]!] = n;
        });
      },
      (group, reply) => {
        group.indices.forEach((i, j) => {
          taken[i] = Number((reply as unknown[])[j]);
        });
      },
    );
    return taken;
  }

  /**
   * A script run on independent calls (no all-or-nothing rule), one round trip per hash slot,
   * under the call gate; while Redis is unavailable, `fallback` answers (the failure policy's
   * fallback store, if any). Forgets the local refusals of those keys (what they hold changes).
   * Never rejects.
   */
  private async perSlot(
    operation: 'refund' | 'charge',
    command: ScriptCommand,
    calls: readonly LimitCall[],
    now: number | undefined,
    fallback: (calls: readonly LimitCall[], indices: readonly number[]) => Promise<unknown>,
    read?: (group: SlotGroup, reply: unknown) => void,
  ): Promise<void> {
    if (calls.length === 0) return;
    for (const call of calls) this.denied?.forget(call);
    const keys = calls.map((call) => this.keyFor(call.algorithm, call.key));
    const groups = this.isCluster
      ? [...groupBySlot(keys)]
      : [[undefined, { indices: keys.map((_, i) => i), keys }] as const];
    // One call per slot, each through its own node's breaker: a shard that is away leaves the
    // others' units to Redis, and its own to the fallback.
    await Promise.all(
      groups.map(([slot, group]) => {
        const mine = group.indices.map((i) => calls[i]!);
        const attempt = async (): Promise<undefined> => {
          const args: (string | number)[] = [this.nowArg(now)];
          for (const call of mine) pushCallArgs(args, call);
          // Not `read?.(group, await command(…))`: an absent `read` would skip the call itself.
          const reply = await command(group.keys.length, ...group.keys, ...args);
          if (read !== undefined) read(group, reply);
          return undefined;
        };
        return this.gate.run(operation, mine.length, attempt, () => fallback(mine, group.indices), slot);
      }),
    );
  }

  /** Forgets local refusals and shuts down the fallback store. The ioredis client is the caller's to close. */
  async shutdown(): Promise<void> {
    this.denied?.clear();
    this.leases.clear();
    await this.options.fallback?.shutdown();
  }

  /**
   * One round trip: a single limit runs its kind's own script; layered limits run the batch
   * script of their kinds, once, or once per hash slot on a Cluster when their keys span slots.
   * Throws (synchronously) for an algorithm without a Lua twin.
   */
  private decide(calls: readonly LimitCall[], now: number | undefined, mode: Mode): Promise<Decision[]> {
    const scripts = this.scripts;
    // A limit with a block runs in the batch script, alone or not.
    if (calls.length === 1 && calls[0]!.block === undefined) {
      const call = calls[0]!;
      const scripted = scripts.scripted(call.algorithm);
      const single = scripted.single ?? scripts.single(scripted);
      const key = this.keyFor(undefined, call.key);
      const time = this.nowArg(now);
      const slot = this.isCluster ? hashSlot(key) : undefined;
      return this.gate.map(
        mode,
        1,
        () => single.command(1, key, time, mode, call.cost, scripted.field, ...single.args),
        (reply) => this.answered(calls, [readSingleDecision(reply, call)], now, mode),
        this.fail(calls, now, mode, slot),
        slot,
      );
    }
    let kinds = 0;
    // The lean batch script of these limits, found along the trie while the keys are made: it
    // takes each distinct user key once (`distinct`), limit i on KEYS[keyOf[i]].
    let lean: LeanBatchNode | undefined = scripts.leanRoot(calls.length);
    const distinct: string[] = [];
    const keyOf: number[] = [];
    const keys = calls.map((call) => {
      const scripted = scripts.scripted(call.algorithm);
      kinds |= scripted.bit;
      const key = this.keyFor(undefined, call.key);
      let k = distinct.indexOf(key);
      if (k < 0) k = distinct.push(key) - 1;
      keyOf.push(k + 1);
      // Shadow limits and blocks run in the generic batch script only.
      if (lean !== undefined)
        lean =
          scripted.lean === undefined || call.shadow === true || call.block !== undefined
            ? undefined
            : leanChild(lean, scripted, k);
      return key;
    });
    const groups = this.isCluster ? groupBySlot(keys) : undefined;
    if (groups !== undefined && groups.size > 1) {
      const batch = scripts.batch(kinds);
      const time = this.nowArg(now);
      const fail = this.fail(calls, now, mode, undefined);
      if (mode === 'peek') return this.split.peek(batch, calls, groups, time, fail);
      return this.split
        .consume(batch, calls, groups, time, fail)
        .then((d) => this.answered(calls, d, now, mode));
    }
    const slot = groups === undefined ? undefined : groups.keys().next().value;
    const leanBatch = lean === undefined ? undefined : scripts.leanBatch(lean, calls, keyOf);
    let run: () => Promise<unknown[]>;
    if (leanBatch != null) {
      const args: (string | number)[] = [this.nowArg(now), mode];
      for (const call of calls) args.push(call.cost);
      run = () => leanBatch(distinct.length, ...distinct, ...args);
    } else {
      const batch = scripts.batch(kinds);
      const args = callArgs(calls, this.nowArg(now), mode);
      run = () => batch(keys.length, ...keys, ...args);
    }
    return this.gate.map(
      mode,
      calls.length,
      run,
      (reply) => this.answered(calls, readBatchDecisions(reply, calls), now, mode),
      this.fail(calls, now, mode, slot),
      slot,
    );
  }

  /** The failure policy's answer to these calls (`slot`: the node whose breaker tells when to retry). */
  private fail(
    calls: readonly LimitCall[],
    now: number | undefined,
    mode: Mode,
    slot: number | undefined,
  ): () => Decision[] | Promise<Decision[]> {
    return mode === 'consume'
      ? () => this.failure.consume(calls, now, slot)
      : () => this.failure.peek(calls, now, slot);
  }

  /** Remembers the refusals Redis gave (deny cache) and answers. */
  private answered(
    calls: readonly LimitCall[],
    decisions: Decision[],
    now: number | undefined,
    mode: Mode,
  ): Decision[] {
    if (this.denied !== undefined && mode === 'consume') {
      this.denied.rememberAll(calls, decisions, () => now ?? this.options.clock());
    }
    return decisions;
  }

  private nowArg(now: number | undefined): string {
    return nowArg(now, this.options.redisTime, this.options.clock, this.options.replayGrace);
  }
}

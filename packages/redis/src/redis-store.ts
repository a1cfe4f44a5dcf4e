import { createHash } from 'node:crypto';
import { type Algorithm, type Decision, decide, type LimitCall, type Store } from '@sluice/core';
import type { BreakerState } from './breaker.js';
import { watchClusterNodes } from './cluster-nodes.js';
import { DenyCache } from './deny-cache.js';
import { Guard } from './guard.js';
import { escapeKey } from './keys.js';
import { LUA_ALGORITHMS, type LuaAlgorithm } from './lua/algorithms.js';
import {
  type FailurePolicy,
  type RedisStoreOptions,
  type ResolvedOptions,
  resolveOptions,
} from './options.js';
import { RedisLeases } from './redis-leases.js';
import { deleteKeys, nowArg, type ScriptCommand, scriptCommand } from './script-command.js';
import { batchScript } from './scripts/batch-script.js';
import { type LeanLimit, leanBatchScript, MAX_LEAN_BATCH } from './scripts/lean-batch-script.js';
import { REFUND_SCRIPT } from './scripts/refund-script.js';
import { leanSingleScript, singleScript } from './scripts/single-script.js';
import { SPLIT_REFUND_SCRIPT } from './scripts/split-refund-script.js';
import { hashSlot } from './slot.js';
import {
  algorithmArgs,
  DECISION_WIDTH,
  luaAlgorithm,
  pushCallArgs,
  readBatchDecisions,
  readDecision,
  readSingleDecision,
} from './wire.js';

/**
 * ioredis command names the scripts are registered under (`defineCommand`, EVALSHA with EVAL
 * fallback). A batch script is named for the set of algorithm kinds it holds (a bit mask of their
 * codes), a single-limit script for its kind; a script with params written in (a lean single-limit
 * or lean batch script) adds the sha1 of its text.
 */
const BATCH_COMMAND = 'sluiceBatch';
const LEAN_BATCH_COMMAND = 'sluiceLeanBatch_';
const SINGLE_COMMAND = 'sluiceOne_';
/**
 * Most scripts with params written in (single-limit and lean batch scripts alike) a store
 * registers: one Redis script each, and the script cache must not grow with ever new params.
 */
const MAX_BAKED = 64;
const REFUND_COMMAND = 'sluiceRefund';
const SPLIT_REFUND_COMMAND = 'sluiceSplitRefund';

/** What the store sends for one algorithm object, computed once: its params never change. */
interface AlgorithmWire {
  /** `<prefix><fingerprint>:{`: the key of a user key is this, the escaped key, and `}`. */
  readonly base: string;
  /** 1 << (code - 1): its place in a batch script's set of kinds. */
  readonly bit: number;
  readonly entry: LuaAlgorithm;
  /** Its params as exact decimal strings, in the order its Lua fragment reads them. */
  readonly params: readonly string[];
  /** Its lean twin with its params, for lean batch scripts; undefined for a kind without one. */
  readonly lean: LeanLimit | undefined;
  /**
   * Its single-limit script, made when it first runs alone: an algorithm used only in layered
   * limits takes none of the store's scripts with params written in.
   */
  single?: SingleWire;
}

/** A single-limit script (a list, or one integer for a packed admission: see `readSingleDecision`). */
interface SingleWire {
  readonly command: ScriptCommand<unknown[] | number>;
  /** What it takes after the cost: the params, or nothing when the script holds them. */
  readonly args: readonly string[];
}

/**
 * The lean batch scripts of a store, by the ordered algorithms of their limits: a trie over
 * `AlgorithmWire`s (weakly held: algorithms made and dropped take their scripts' entries along).
 * `command` null: past the cap of scripts with params written in, the generic batch runs.
 */
interface LeanBatchNode {
  command?: ScriptCommand | null;
  readonly next: WeakMap<AlgorithmWire, LeanBatchNode>;
  /** The same trie for a limit in shadow mode (its script is another: shadow is written in). */
  shadow?: WeakMap<AlgorithmWire, LeanBatchNode>;
}

type Mode = 'consume' | 'peek';

/** A batch's calls that share one hash slot, with their positions in the batch. */
interface SlotGroup {
  readonly indices: number[];
  readonly keys: string[];
}

/** One slot of a split consume that admitted: what a refund needs to give it back. */
interface AdmittedSlot {
  readonly group: SlotGroup;
  readonly calls: readonly LimitCall[];
  /** The batch's reply: the `now` it consumed at (exact `%.17g`), decisions, then its journal. */
  readonly reply: readonly unknown[];
}

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
 * @example
 * const client = new Redis({ enableOfflineQueue: false });
 * const limiter = new Limiter({
 *   algorithm: gcra({ rate: 10, period: '1s' }),
 *   store: new RedisStore({ client, failurePolicy: new MemoryStore() }),
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
  private readonly batches = new Map<number, ScriptCommand>();
  private readonly wires = new WeakMap<Algorithm, AlgorithmWire>();
  /** Names of the scripts registered with their params written in (see `bake`). */
  private readonly baked = new Set<string>();
  private readonly leanBatches: LeanBatchNode = { next: new WeakMap() };
  private readonly refunds: ScriptCommand;
  private readonly splitRefunds: ScriptCommand;
  private readonly guard: Guard;
  private readonly denied: DenyCache | undefined;
  private readonly keyBases = new WeakMap<Algorithm, string>();
  private localRefusals = 0;

  constructor(options: RedisStoreOptions) {
    this.options = resolveOptions(options);
    const { client } = this.options;
    this.prefix = this.options.prefix;
    this.isCluster = client.isCluster;
    watchClusterNodes(client);
    this.refunds = scriptCommand(client, REFUND_COMMAND, REFUND_SCRIPT);
    this.splitRefunds = scriptCommand(client, SPLIT_REFUND_COMMAND, SPLIT_REFUND_SCRIPT);
    this.guard = new Guard(this.options);
    this.leases = new RedisLeases(this.options, this.guard);
    this.denied = this.options.denyCache > 0 ? new DenyCache(this.options.denyCache) : undefined;
  }

  /** The circuit breaker's state (`'closed'` when there is no breaker). */
  get breakerState(): BreakerState {
    return this.guard.state;
  }

  /** Requests the deny cache refused without a round trip since the store was made (for metrics). */
  get denyCacheHits(): number {
    return this.localRefusals;
  }

  /** The Redis key holding the state of `key` under `algorithm` (what `redis-cli` shows). */
  keyFor(algorithm: Algorithm, key: string): string {
    return `${this.keyBase(algorithm)}${escapeKey(key)}}`;
  }

  private keyBase(algorithm: Algorithm): string {
    let base = this.keyBases.get(algorithm);
    if (base === undefined) {
      base = `${this.prefix}${algorithm.fingerprint}:{`;
      this.keyBases.set(algorithm, base);
    }
    return base;
  }

  consume(calls: readonly LimitCall[], now: number | undefined): Promise<Decision[]> {
    if (this.denied !== undefined) {
      const local = this.refuseLocally(calls, now ?? this.options.clock());
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

  /** Deletes the keys (and forgets local refusals). Rejects with `ERR_SLUICE_STORE_FAILURE` when Redis fails. */
  async reset(calls: readonly Pick<LimitCall, 'algorithm' | 'key'>[]): Promise<void> {
    for (const call of calls) this.denied?.forget(call);
    const policy = this.options.failurePolicy;
    if (typeof policy === 'object') await policy.reset(calls);
    if (calls.length === 0) return;
    // Each limit's block record too (same slot): a reset client starts with no block and no streak.
    const keys = calls.flatMap((call) => {
      const key = this.keyFor(call.algorithm, call.key);
      return [key, blockKey(key)];
    });
    const groups = this.isCluster ? [...groupBySlot(keys).values()].map((g) => g.keys) : [keys];
    await this.guard.strict('reset', calls.length, () =>
      Promise.all(groups.map((group) => deleteKeys(this.options.client, group))),
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
    if (refundable.length === 0) return;
    for (const call of refundable) this.denied?.forget(call);
    const keys = refundable.map((call) => this.keyFor(call.algorithm, call.key));
    const groups = this.isCluster
      ? [...groupBySlot(keys).values()]
      : [{ indices: keys.map((_, i) => i), keys }];
    const attempt = (): Promise<undefined> =>
      Promise.all(
        groups.map((group) => {
          const args: (string | number)[] = [this.nowArg(now)];
          for (const i of group.indices) pushCallArgs(args, refundable[i]!);
          return this.refunds(group.keys.length, ...group.keys, ...args);
        }),
      ).then(() => undefined);
    const policy = this.options.failurePolicy;
    await this.guard.run('refund', refundable.length, attempt, async () => {
      if (typeof policy !== 'object' || policy.refund === undefined) return undefined;
      try {
        await policy.refund(refundable, now);
      } catch (error) {
        this.guard.report('fallback', refundable.length, error);
      }
      return undefined;
    });
  }

  /** Forgets local refusals and shuts down the fallback store. The ioredis client is the caller's to close. */
  async shutdown(): Promise<void> {
    this.denied?.clear();
    this.leases.clear();
    const policy = this.options.failurePolicy;
    if (typeof policy === 'object') await policy.shutdown();
  }

  // Redis ------------------------------------------------------------------------------------------

  /**
   * One round trip: a single limit runs its kind's own script; layered limits run the batch
   * script of their kinds, once, or once per hash slot on a Cluster when their keys span slots.
   * Throws (synchronously) for an algorithm without a Lua twin.
   */
  private decide(calls: readonly LimitCall[], now: number | undefined, mode: Mode): Promise<Decision[]> {
    const fail = mode === 'consume' ? () => this.failConsume(calls, now) : () => this.failPeek(calls, now);
    if (calls.length === 1 && calls[0]!.block === undefined) {
      const call = calls[0]!;
      const wire = this.wire(call.algorithm);
      const single = wire.single ?? this.singleFor(wire);
      const key = `${wire.base}${escapeKey(call.key)}}`;
      const time = this.nowArg(now);
      return this.guard.map(
        mode,
        1,
        () => single.command(1, key, time, mode, call.cost, ...single.args),
        (reply) => this.settled(calls, [readSingleDecision(reply, call)], now, mode),
        fail,
      );
    }
    let kinds = 0;
    // The lean batch script of these limits, found along the trie while the keys are made.
    // A batch of none (a store called directly) has no script to make: the generic batch answers it.
    let lean: LeanBatchNode | undefined =
      calls.length > 0 && calls.length <= MAX_LEAN_BATCH ? this.leanBatches : undefined;
    const keys = calls.map((call) => {
      const wire = this.wire(call.algorithm);
      kinds |= wire.bit;
      // Blocks run in the generic batch script only.
      if (lean !== undefined)
        lean =
          wire.lean === undefined || call.block !== undefined
            ? undefined
            : leanChild(lean, wire, call.shadow === true);
      return `${wire.base}${escapeKey(call.key)}}`;
    });
    const groups = this.isCluster ? groupBySlot(keys) : undefined;
    if (groups !== undefined && groups.size > 1) {
      const batch = this.batchFor(kinds);
      const slots = [...groups.values()];
      if (mode === 'peek')
        return this.guard.run(mode, calls.length, () => this.peekSlots(batch, calls, slots, now), fail);
      return this.consumeSlots(batch, calls, slots, now, fail).then((d) => this.settled(calls, d, now, mode));
    }
    const leanBatch = lean === undefined ? undefined : this.leanBatch(lean, calls);
    let run: () => Promise<unknown[]>;
    if (leanBatch != null) {
      const args: (string | number)[] = [this.nowArg(now), mode];
      for (const call of calls) args.push(call.cost);
      run = () => leanBatch(keys.length, ...keys, ...args);
    } else {
      const batch = this.batchFor(kinds);
      const all = withBlockKeys(keys, calls);
      const args = this.callArgs(calls, now, mode);
      run = () => batch(all.length, ...all, ...args);
    }
    return this.guard.map(
      mode,
      calls.length,
      run,
      (reply) => this.settled(calls, readBatchDecisions(reply, calls), now, mode),
      fail,
    );
  }

  /** Remembers the refusals Redis gave (deny cache) and answers. */
  private settled(
    calls: readonly LimitCall[],
    decisions: Decision[],
    now: number | undefined,
    mode: Mode,
  ): Decision[] {
    if (this.denied !== undefined && mode === 'consume') {
      let at: number | undefined;
      for (let i = 0; i < calls.length; i++) {
        // A shadow limit's refusal refuses nothing: it must not be answered locally.
        if (decisions[i]!.allowed || calls[i]!.shadow === true) continue;
        at ??= now ?? this.options.clock();
        this.denied.remember(calls[i]!, at, decisions[i]!);
      }
    }
    return decisions;
  }

  private wire(algorithm: Algorithm): AlgorithmWire {
    let wire = this.wires.get(algorithm);
    if (wire === undefined) {
      const { code, entry } = luaAlgorithm(algorithm);
      const params = algorithmArgs(algorithm).slice(1);
      wire = {
        base: this.keyBase(algorithm),
        bit: 1 << (code - 1),
        entry,
        params,
        lean: entry.lean === undefined ? undefined : { lean: entry.lean, params },
      };
      this.wires.set(algorithm, wire);
    }
    return wire;
  }

  /** Makes (once) the single-limit script of `wire`'s algorithm. */
  private singleFor(wire: AlgorithmWire): SingleWire {
    const { entry, params } = wire;
    const client = this.options.client;
    if (entry.lean === undefined) {
      wire.single = {
        command: scriptCommand(client, `${SINGLE_COMMAND}${entry.table}`, singleScript(entry)),
        args: params,
      };
      return wire.single;
    }
    // One script per set of params (an application has few), else the script for any params.
    const baked = this.bake<unknown[] | number>(
      `${SINGLE_COMMAND}${entry.table}_`,
      leanSingleScript(entry.lean, params),
    );
    wire.single =
      baked === undefined
        ? {
            command: scriptCommand(client, `${SINGLE_COMMAND}${entry.table}`, leanSingleScript(entry.lean)),
            args: params,
          }
        : { command: baked, args: [] };
    return wire.single;
  }

  /**
   * The lean batch script at `node` (the calls' algorithms, in order), registered on first use; null
   * past the cap of scripts with params written in (the generic batch script runs then).
   */
  private leanBatch(node: LeanBatchNode, calls: readonly LimitCall[]): ScriptCommand | null {
    if (node.command === undefined) {
      const lua = leanBatchScript(
        calls.map((call) => {
          const lean = this.wire(call.algorithm).lean!;
          return call.shadow === true ? { ...lean, shadow: true } : lean;
        }),
      );
      node.command = this.bake(LEAN_BATCH_COMMAND, lua) ?? null;
    }
    return node.command;
  }

  /**
   * Registers `lua`, a script with params written in, under `<prefix><sha1 of its text>` (two
   * stores on one client share it), unless the store already holds MAX_BAKED others: an
   * application that makes algorithms with ever new params (per tenant, say) must not grow the
   * Redis script cache without bound. Undefined past the cap: the params then travel as ARGV.
   */
  private bake<R>(prefix: string, lua: string): ScriptCommand<R> | undefined {
    const name = `${prefix}${createHash('sha1').update(lua).digest('hex')}`;
    if (!this.baked.has(name) && this.baked.size >= MAX_BAKED) return undefined;
    this.baked.add(name);
    return scriptCommand<R>(this.options.client, name, lua);
  }

  /** The batch script holding exactly the algorithm kinds in `kinds` (a bit mask of codes). */
  private batchFor(kinds: number): ScriptCommand {
    let batch = this.batches.get(kinds);
    if (batch === undefined) {
      const algorithms = LUA_ALGORITHMS.filter((_, i) => (kinds & (1 << i)) !== 0);
      batch = scriptCommand(this.options.client, `${BATCH_COMMAND}${kinds}`, batchScript(algorithms));
      this.batches.set(kinds, batch);
    }
    return batch;
  }

  /**
   * ARGV of the batch script after the keys: now ('' = Redis TIME), mode, the calls' options (shadow,
   * block: see `batchScript`), then each call's group.
   */
  private callArgs(calls: readonly LimitCall[], now: number | undefined, mode: string): (string | number)[] {
    const args: (string | number)[] = [this.nowArg(now), mode, 0];
    for (let i = 0; i < calls.length; i++) {
      const { shadow, block } = calls[i]!;
      if (shadow !== true && block === undefined) continue;
      args[2] = (args[2] as number) + 1;
      args.push(i + 1, shadow === true ? 1 : 0);
      if (block === undefined) args.push(0, 0, 0, 0);
      else args.push(String(block.duration), String(block.factor), String(block.max), String(block.decay));
    }
    for (const call of calls) pushCallArgs(args, call);
    return args;
  }

  private nowArg(now: number | undefined): string {
    return nowArg(now, this.options.redisTime, this.options.clock, this.options.replayGrace);
  }

  /** A peek whose keys span several Cluster slots: the batch script once per slot, in parallel. */
  private async peekSlots(
    batch: ScriptCommand,
    calls: readonly LimitCall[],
    slots: readonly SlotGroup[],
    now: number | undefined,
  ): Promise<Decision[]> {
    const decisions = new Array<Decision>(calls.length);
    await Promise.all(
      slots.map(async (group) => {
        const groupCalls = group.indices.map((i) => calls[i]!);
        const keys = withBlockKeys(group.keys, groupCalls);
        const reply = await batch(keys.length, ...keys, ...this.callArgs(groupCalls, now, 'peek'));
        group.indices.forEach((index, j) => {
          decisions[index] = readDecision(reply, 1 + j * DECISION_WIDTH, calls[index]!);
        });
      }),
    );
    return decisions;
  }

  /**
   * A consume whose keys span several Cluster slots. The refunds run after the consume's deadline,
   * under their own: a slow refund must not turn a refusal Redis already gave into the failure
   * policy's answer (an admission, under `'allow'`). A slot that failed is answered by the policy
   * once the others are refunded; after a timeout the policy answers at once and the refunds run
   * in the background when the slots reply.
   */
  private async consumeSlots(
    batch: ScriptCommand,
    calls: readonly LimitCall[],
    slots: readonly SlotGroup[],
    now: number | undefined,
    fail: () => Decision[] | Promise<Decision[]>,
  ): Promise<Decision[]> {
    // Settle (never reject) once each admitting slot is refunded or its failure reported.
    const refunds: Promise<void>[] = [];
    const decisions = await this.guard.run(
      'consume',
      calls.length,
      () => this.splitConsume(batch, calls, slots, now, refunds),
      fail,
    );
    if (refunds.length > 0) await Promise.all(refunds);
    return decisions;
  }

  /**
   * The batch script once per slot, in parallel, each all-or-nothing within its slot. When not
   * every slot admitted (one refused, or failed), each slot that admitted gets back exactly what it
   * consumed, at the `now` it consumed at ({@link SPLIT_REFUND_SCRIPT}: the previous value when
   * nobody wrote the key since, else `Algorithm.refund`), one round trip per slot, in parallel
   * (pushed to `refunds`); then its limits report as they stand (`peek`), as a one-slot batch
   * reports the limits that would have admitted a refused request.
   */
  private async splitConsume(
    batch: ScriptCommand,
    calls: readonly LimitCall[],
    slots: readonly SlotGroup[],
    now: number | undefined,
    refunds: Promise<void>[],
  ): Promise<Decision[]> {
    const decisions = new Array<Decision>(calls.length);
    const runs = await Promise.allSettled(
      slots.map(async (group): Promise<AdmittedSlot | undefined> => {
        const groupCalls = group.indices.map((i) => calls[i]!);
        const keys = withBlockKeys(group.keys, groupCalls);
        const reply = await batch(keys.length, ...keys, ...this.callArgs(groupCalls, now, 'split'));
        let admitted = true;
        group.indices.forEach((index, j) => {
          const decision = readDecision(reply, 1 + j * DECISION_WIDTH, calls[index]!);
          decisions[index] = decision;
          if (!decision.allowed && calls[index]!.shadow !== true) admitted = false;
        });
        return admitted ? { group, calls: groupCalls, reply } : undefined;
      }),
    );
    let failed: PromiseRejectedResult | undefined;
    const admitted: AdmittedSlot[] = [];
    for (const run of runs) {
      if (run.status === 'rejected') failed ??= run;
      else if (run.value !== undefined) admitted.push(run.value);
    }
    if (admitted.length === slots.length) return decisions;
    for (const slot of admitted) refunds.push(this.refundSlot(slot, decisions));
    // A failed slot is answered by the failure policy, which counts this request its own way.
    if (failed !== undefined) throw failed.reason;
    return decisions;
  }

  /**
   * Gives back what one admitting slot consumed. Never rejects: a failure (or an open breaker) is
   * reported as `operation: 'rollback'` and the slot keeps the units until they drain; its
   * decisions then stay as consumed, which is how the slot stands.
   */
  private async refundSlot(slot: AdmittedSlot, decisions: Decision[]): Promise<void> {
    const { group, calls, reply: consumed } = slot;
    const args: (string | number)[] = [consumed[0] as string];
    for (const call of calls) pushCallArgs(args, call);
    const journal = 1 + calls.length * DECISION_WIDTH;
    for (let j = 0; j < calls.length; j++) {
      const at = journal + j * 3;
      const previous = consumed[at + 1];
      const next = consumed[at + 2];
      args.push(consumed[at] === 1 ? 1 : 0);
      args.push(typeof previous === 'string' ? 1 : 0, typeof previous === 'string' ? previous : '');
      args.push(typeof next === 'string' ? 1 : 0, typeof next === 'string' ? next : '');
    }
    const reply = await this.guard.compensate('rollback', group.keys.length, () =>
      this.splitRefunds(group.keys.length, ...group.keys, ...args),
    );
    if (reply === undefined) return;
    group.indices.forEach((index, j) => {
      decisions[index] = readDecision(reply, 1 + j * DECISION_WIDTH, calls[j]!);
    });
  }

  // Failure ----------------------------------------------------------------------------------------

  private failConsume(
    calls: readonly LimitCall[],
    now: number | undefined,
  ): Decision[] | Promise<Decision[]> {
    const policy = this.options.failurePolicy;
    if (typeof policy === 'object') return this.fallback(calls, () => policy.consume(calls, now), true);
    return this.policyDecisions(policy, calls, true);
  }

  private failPeek(calls: readonly LimitCall[], now: number | undefined): Decision[] | Promise<Decision[]> {
    const policy = this.options.failurePolicy;
    if (typeof policy === 'object') return this.fallback(calls, () => policy.peek(calls, now), false);
    return this.policyDecisions(policy, calls, false);
  }

  private async fallback(
    calls: readonly LimitCall[],
    run: () => Decision[] | Promise<Decision[]>,
    consuming: boolean,
  ): Promise<Decision[]> {
    try {
      return await run();
    } catch (error) {
      this.guard.report('fallback', calls.length, error);
      return this.policyDecisions('allow', calls, consuming);
    }
  }

  /**
   * Fail open: allowed, reported as a fresh limit would be after (consume) or before (peek) this
   * request; nothing is counted anywhere. Fail closed: refused with `'store-unavailable'`, to retry
   * when the breaker next probes Redis.
   */
  private policyDecisions(
    policy: Exclude<FailurePolicy, Store>,
    calls: readonly LimitCall[],
    consuming: boolean,
  ): Decision[] {
    if (policy === 'allow') {
      return calls.map((call) => {
        const limit = call.algorithm.limit;
        return decide(
          true,
          limit,
          Math.max(0, limit - (consuming ? call.cost : 0)),
          0,
          0,
          0,
          call.policy,
          undefined,
        );
      });
    }
    const retryAfter = this.guard.retryAfter();
    return calls.map((call) =>
      decide(false, call.algorithm.limit, 0, 0, retryAfter, 0, call.policy, 'store-unavailable'),
    );
  }

  private refuseLocally(calls: readonly LimitCall[], now: number): Decision[] | undefined {
    let refused = false;
    const decisions = calls.map((call) => {
      const decision = this.denied!.lookup(call, now);
      if (decision !== undefined) refused = true;
      return decision;
    });
    if (!refused) return undefined;
    // Limits not consulted are reported as allowed with nothing known left (remaining 0).
    return decisions.map(
      (decision, i) =>
        decision ?? decide(true, calls[i]!.algorithm.limit, 0, 0, 0, 0, calls[i]!.policy, undefined),
    );
  }
}

function leanChild(node: LeanBatchNode, wire: AlgorithmWire, shadow: boolean): LeanBatchNode {
  if (shadow && node.shadow === undefined) node.shadow = new WeakMap();
  const next = shadow ? node.shadow! : node.next;
  let child = next.get(wire);
  if (child === undefined) {
    child = { next: new WeakMap() };
    next.set(wire, child);
  }
  return child;
}

/** The key of a limit's block record: its state key and `:b`, in the same hash slot (same tag). */
function blockKey(stateKey: string): string {
  return `${stateKey}:b`;
}

/** The batch script's KEYS: the state keys, then the block record key of each call with a block. */
function withBlockKeys(keys: readonly string[], calls: readonly LimitCall[]): readonly string[] {
  let all: string[] | undefined;
  for (let i = 0; i < calls.length; i++) {
    if (calls[i]!.block === undefined) continue;
    all ??= [...keys];
    all.push(blockKey(keys[i]!));
  }
  return all ?? keys;
}

function groupBySlot(keys: readonly string[]): Map<number, SlotGroup> {
  const groups = new Map<number, SlotGroup>();
  keys.forEach((key, i) => {
    const slot = hashSlot(key);
    let group = groups.get(slot);
    if (group === undefined) {
      group = { indices: [], keys: [] };
      groups.set(slot, group);
    }
    group.indices.push(i);
    group.keys.push(key);
  });
  return groups;
}

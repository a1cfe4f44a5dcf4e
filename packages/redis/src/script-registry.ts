import { createHash } from 'node:crypto';
import type { Algorithm, LimitCall } from '@sluice/core';
import type { RedisClient } from './client.js';
import { LUA_ALGORITHMS, type LuaAlgorithm } from './lua/algorithms.js';
import { type ScriptCommand, scriptCommand } from './script-command.js';
import { batchScript } from './scripts/batch-script.js';
import { CHARGE_SCRIPT } from './scripts/charge-script.js';
import { type LeanLimit, leanBatchScript, MAX_LEAN_BATCH } from './scripts/lean-batch-script.js';
import { REFUND_SCRIPT } from './scripts/refund-script.js';
import { RESET_SCRIPT } from './scripts/reset-script.js';
import { leanSingleScript, singleScript } from './scripts/single-script.js';
import { SPLIT_REFUND_SCRIPT } from './scripts/split-refund-script.js';
import { algorithmArgs, luaAlgorithm } from './wire.js';

/**
 * ioredis command names the scripts are registered under (`defineCommand`, EVALSHA with EVAL
 * fallback). A batch script is named for the set of algorithm kinds it holds (a bit mask of their
 * codes), a single-limit script for its kind; a script with params written in (a lean single-limit
 * or lean batch script) adds the sha1 of its text.
 */
const BATCH_COMMAND = 'sluiceBatch';
const LEAN_BATCH_COMMAND = 'sluiceLeanBatch_';
const SINGLE_COMMAND = 'sluiceOne_';
const REFUND_COMMAND = 'sluiceRefund';
const SPLIT_REFUND_COMMAND = 'sluiceSplitRefund';
const CHARGE_COMMAND = 'sluiceCharge';
const RESET_COMMAND = 'sluiceReset';
/**
 * Most scripts with params written in (single-limit and lean batch scripts alike) a store
 * registers: one Redis script each, and the script cache must not grow with ever new params.
 */
export const MAX_BAKED = 64;

/**
 * One algorithm object as the store's scripts run it, computed once (its params never change): its
 * field, its kind's bit, its Lua entry and params, its lean form and its single-limit script.
 */
export interface ScriptedAlgorithm {
  /** Its field in the hash of a user key: the algorithm's fingerprint (the limit's name bound in). */
  readonly field: string;
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
  single?: SingleCommand;
}

/** A single-limit script (a list, or one integer for a packed admission: see `readSingleDecision`). */
export interface SingleCommand {
  readonly command: ScriptCommand<unknown[] | number>;
  /** What it takes after the cost: the params, or nothing when the script holds them. */
  readonly args: readonly string[];
}

/**
 * The lean batch scripts of a store, by the ordered algorithms of their limits and the user key
 * each is on (its index among the batch's distinct keys): a trie over `ScriptedAlgorithm`s (weakly
 * held: algorithms made and dropped take their scripts' entries along), then key indices.
 * `command` null: past the cap of scripts with params written in, the generic batch runs.
 */
export interface LeanBatchNode {
  command?: ScriptCommand | null;
  readonly next: WeakMap<ScriptedAlgorithm, LeanBatchNode[]>;
}

/**
 * Which script runs a call, made and registered on first use: a single limit runs its kind's own
 * script (lean, with its params written in, when it has a lean twin: `bake`); layered limits run
 * the lean batch script of their ordered algorithms when all have a lean twin, else the batch
 * script of their set of kinds.
 */
export class ScriptRegistry {
  /** The refund script ({@link REFUND_SCRIPT}). */
  readonly refund: ScriptCommand;
  /** The split-refund script ({@link SPLIT_REFUND_SCRIPT}). */
  readonly splitRefund: ScriptCommand;
  /** The charge script ({@link CHARGE_SCRIPT}). */
  readonly charge: ScriptCommand;
  /** The reset script ({@link RESET_SCRIPT}). */
  readonly reset: ScriptCommand<number>;
  private readonly batches = new Map<number, ScriptCommand>();
  private readonly scriptedAlgorithms = new WeakMap<Algorithm, ScriptedAlgorithm>();
  /** Names of the scripts registered with their params written in (see `bake`). */
  private readonly baked = new Set<string>();
  private readonly leanBatches: LeanBatchNode = { next: new WeakMap() };

  constructor(private readonly client: RedisClient) {
    this.refund = scriptCommand(client, REFUND_COMMAND, REFUND_SCRIPT);
    this.splitRefund = scriptCommand(client, SPLIT_REFUND_COMMAND, SPLIT_REFUND_SCRIPT);
    this.charge = scriptCommand(client, CHARGE_COMMAND, CHARGE_SCRIPT);
    this.reset = scriptCommand(client, RESET_COMMAND, RESET_SCRIPT);
  }

  /** What the scripts need of `algorithm`, computed once. */
  scripted(algorithm: Algorithm): ScriptedAlgorithm {
    let scripted = this.scriptedAlgorithms.get(algorithm);
    if (scripted === undefined) {
      const { code, entry } = luaAlgorithm(algorithm);
      const params = algorithmArgs(algorithm).slice(2);
      const field = algorithm.fingerprint;
      scripted = {
        field,
        bit: 1 << (code - 1),
        entry,
        params,
        lean: entry.lean === undefined ? undefined : { lean: entry.lean, params, field },
      };
      this.scriptedAlgorithms.set(algorithm, scripted);
    }
    return scripted;
  }

  /** The single-limit script of `scripted`'s algorithm, made once. */
  single(scripted: ScriptedAlgorithm): SingleCommand {
    if (scripted.single !== undefined) return scripted.single;
    const { entry, params } = scripted;
    if (entry.lean === undefined) {
      scripted.single = {
        command: scriptCommand(this.client, `${SINGLE_COMMAND}${entry.table}`, singleScript(entry)),
        args: params,
      };
      return scripted.single;
    }
    // One script per set of params (an application has few), else the script for any params.
    const baked = this.bake<unknown[] | number>(
      `${SINGLE_COMMAND}${entry.table}_`,
      leanSingleScript(entry.lean, params),
    );
    scripted.single =
      baked === undefined
        ? {
            command: scriptCommand(
              this.client,
              `${SINGLE_COMMAND}${entry.table}`,
              leanSingleScript(entry.lean),
            ),
            args: params,
          }
        : { command: baked, args: [] };
    return scripted.single;
  }

  /**
   * The root of the lean batch trie for a batch of `size` limits, or undefined when no lean batch
   * can run it (none: a store called directly has no script to make; past MAX_LEAN_BATCH).
   */
  leanRoot(size: number): LeanBatchNode | undefined {
    return size > 0 && size <= MAX_LEAN_BATCH ? this.leanBatches : undefined;
  }

  /**
   * The lean batch script at `node` (the calls' algorithms, in order, call i on KEYS[keyOf[i]]),
   * registered on first use; null past the cap of scripts with params written in (the generic batch
   * script runs then).
   */
  leanBatch(
    node: LeanBatchNode,
    calls: readonly LimitCall[],
    keyOf: readonly number[],
  ): ScriptCommand | null {
    if (node.command === undefined) {
      const lua = leanBatchScript(
        calls.map((call) => this.scripted(call.algorithm).lean!),
        keyOf,
      );
      node.command = this.bake(LEAN_BATCH_COMMAND, lua) ?? null;
    }
    return node.command;
  }

  /** The batch script holding exactly the algorithm kinds in `kinds` (a bit mask of codes). */
  batch(kinds: number): ScriptCommand {
    let batch = this.batches.get(kinds);
    if (batch === undefined) {
      const algorithms = LUA_ALGORITHMS.filter((_, i) => (kinds & (1 << i)) !== 0);
      batch = scriptCommand(this.client, `${BATCH_COMMAND}${kinds}`, batchScript(algorithms));
      this.batches.set(kinds, batch);
    }
    return batch;
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
    return scriptCommand<R>(this.client, name, lua);
  }
}

/** The trie node below `node` for `scripted`'s algorithm on the batch's `keyIndex`th user key, made on first use. */
export function leanChild(node: LeanBatchNode, scripted: ScriptedAlgorithm, keyIndex: number): LeanBatchNode {
  let children = node.next.get(scripted);
  if (children === undefined) {
    children = [];
    node.next.set(scripted, children);
  }
  let child = children[keyIndex];
  if (child === undefined) {
    child = { next: new WeakMap() };
    children[keyIndex] = child;
  }
  return child;
}

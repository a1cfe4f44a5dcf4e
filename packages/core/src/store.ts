import type { Algorithm } from './algorithm.js';
import {
  type BlockPolicy,
  type BlockState,
  blockedDecision,
  blockingDecision,
  blockLeft,
  startBlock,
} from './block.js';
import type { LeaseStore } from './concurrency/lease-store.js';
import type { Decision } from './decision.js';
import type { MaybePromise } from './maybe.js';

// Where stores' answers have always been typed from; its home is maybe.ts (no import loop).
export type { MaybePromise } from './maybe.js';

/** One limit of one request: which algorithm, on which key, for how many units. */
export interface LimitCall {
  /** The algorithm and its validated parameters (`algorithm.fingerprint` names its key space). */
  readonly algorithm: Algorithm;
  /** The caller's key, unmodified: any string, braces, newlines and unicode included. */
  readonly key: string;
  /** Units this request takes: an integer ≥ 1 (validated by the limiter). */
  readonly cost: number;
  /** The limit's name, copied into its decision's `policy`. */
  readonly policy: string;
  /**
   * Shadow mode (`enforce: false`): the limit is evaluated and its state kept as if it were
   * enforced, but its refusal never vetoes the batch. Absent: enforced.
   */
  readonly shadow?: boolean;
  /**
   * Block after a refusal: while the key's block record (`BlockState`, kept apart from the
   * algorithm's state) says it is blocked, the limit refuses with `'blocked'` without running the
   * algorithm; a refusal of its own (`'rate-limited'`) starts the next block. Absent: no block.
   */
  readonly block?: BlockPolicy;
}

/**
 * Where limit state lives. A store is handed a batch of calls, one per layered limit of a request,
 * and must treat the batch as one atomic step:
 *
 * - `consume`: every call is evaluated against state as of `now`. If every limit admits, every
 *   limit's new state is written; if any refuses, no limit is consumed (a strict token bucket that
 *   itself refused may still restart its refill clock). A call with `shadow` never counts as a
 *   refusal of the batch; a call with `block` honours and starts blocks (see `LimitCall.block`). No other batch on the same keys may
 *   interleave. Returns one per-limit decision per call, in order (`batchStep` does all of this
 *   for a store that can run TypeScript inside its own transaction).
 * - `peek`: the per-limit decisions for the batch without writing anything.
 * - `reset`: forget the state of each `(algorithm, key)`; the next call sees a fresh limit.
 * - `shutdown`: release timers, connections the store owns, and memory. Idempotent.
 *
 * `now` is ms since the epoch when the caller supplied it (client timestamps, replays); when it is
 * `undefined` the store reads its own clock (the memory store's injectable `clock`, the Redis
 * store's client clock or Redis `TIME`).
 *
 * Timing: a store may answer synchronously. A store that does I/O must bound every call with a
 * timeout and apply its failure policy rather than reject; when it does reject, the limiter
 * reports `ERR_SLUICE_STORE_FAILURE`.
 */
export interface Store {
  /**
   * `true` on a store whose `consume` and `peek` always answer synchronously (the memory store):
   * `Limiter.checkSync` and `peekSync` need it, and refuse any other store before calling it.
   */
  readonly synchronous?: boolean;
  consume(calls: readonly LimitCall[], now: number | undefined): MaybePromise<Decision[]>;
  peek(calls: readonly LimitCall[], now: number | undefined): MaybePromise<Decision[]>;
  reset(calls: readonly Pick<LimitCall, 'algorithm' | 'key'>[]): MaybePromise<void>;
  shutdown(): MaybePromise<void>;
  /**
   * Optional: what `consume([call], now)` answers for one call without `shadow` or `block`,
   * without the batch's two arrays. `Limiter` calls it for a single limit on a string key (the
   * commonest call there is) whenever the store has it and its `consume` has not been replaced
   * since the limiter was made (a test's spy sees every call). Like `consume`, it answers a new
   * decision on every call, shared with nothing: the limiter answers a `decide` decision as is
   * (its `limits` is made when read), and copies any other.
   */
  consumeOne?(
    algorithm: Algorithm,
    key: string,
    cost: number,
    policy: string,
    now: number | undefined,
  ): MaybePromise<Decision>;
  /**
   * Optional: gives back the units of calls admitted earlier with a delay whose request never ran
   * (`Algorithm.refund`; calls whose algorithm has no `refund` are ignored). Adapters call it when
   * a client disconnects while held; a store without it keeps the slot until the queue drains.
   */
  refund?(calls: readonly LimitCall[], now: number | undefined): MaybePromise<void>;
  /**
   * Optional: takes up to `cost` units from each call's limit without refusing, as many as it has
   * left (`chargeStep`): a limit is never driven below zero, and the units it had no room for are
   * forgiven. Calls are independent (no all-or-nothing rule). Answers the units each call took.
   * Adapters call it to settle a reservation upwards (`settle(req, actual)` once the actual cost is
   * known) and to carry a client's consumption over to a new plan.
   */
  charge?(calls: readonly LimitCall[], now: number | undefined): MaybePromise<number[]>;
  /**
   * Optional: concurrency leases (the concurrent requests limiter and the fleet usage load
   * shedder). See `LeaseStore` for the exact state and steps a store must implement.
   */
  readonly leases?: LeaseStore;
}

/** Marks a batch position whose stored state must not change. */
export const UNCHANGED: unique symbol = Symbol('sluice.unchanged');

/** What a store should write after a batch's step: a state, `undefined` (delete), or `UNCHANGED`. */
export type StateWrite = unknown | typeof UNCHANGED;

/** What a store should write to a call's block record: a new record and its ttl (ms), or `UNCHANGED`. */
export type BlockWrite = { readonly state: BlockState; readonly ttl: number } | typeof UNCHANGED;

/**
 * The all-or-nothing rule over pure algorithms, for any store that holds the batch's states at
 * once (in memory, or inside a transaction). Given the states read for each call (and, for calls
 * with `block`, their block records), returns the per-limit decisions and the writes to make.
 * A blocked call refuses without running its algorithm; shadow calls never veto the batch.
 */
export function batchStep(
  calls: readonly LimitCall[],
  states: readonly unknown[],
  now: number,
  blocks?: readonly (BlockState | undefined)[],
): { decisions: Decision[]; writes: StateWrite[]; blocks: BlockWrite[] } {
  const transitions = calls.map((call, i) => {
    const left = call.block === undefined ? 0 : blockLeft(blocks?.[i], now);
    if (left > 0)
      return { decision: blockedDecision(call.algorithm.limit, left, call.policy), state: states[i] };
    return call.algorithm.consume(states[i], now, call.cost, call.policy);
  });
  let decisions: Decision[];
  let writes: StateWrite[];
  if (transitions.every((t, i) => t.decision.allowed || calls[i]!.shadow === true)) {
    decisions = transitions.map((t) => t.decision);
    writes = transitions.map((t, i) => (t.state === states[i] ? UNCHANGED : t.state));
  } else {
    // Refused: limits that would have admitted keep their state and report it as it stands; a
    // limit that refused by itself keeps its refusal state (the strict-mode clock restart).
    decisions = transitions.map((t, i) => {
      const call = calls[i]!;
      return t.decision.allowed ? call.algorithm.peek(states[i], now, call.cost, call.policy) : t.decision;
    });
    writes = transitions.map((t, i) => (t.decision.allowed || t.state === states[i] ? UNCHANGED : t.state));
  }
  // A limit with a block that refused by itself (not blocked already) starts the next block.
  const blockWrites = calls.map((call, i): BlockWrite => {
    if (call.block === undefined || decisions[i]!.reason !== 'rate-limited') return UNCHANGED;
    const started = startBlock(blocks?.[i], call.block, now);
    decisions[i] = blockingDecision(decisions[i]!, started.duration, call.block.reset);
    // `reset`: the block forgets the limit's state, so the key starts afresh when it ends.
    if (call.block.reset) writes[i] = undefined;
    return { state: started.state, ttl: started.ttl };
  });
  return { decisions, writes, blocks: blockWrites };
}

/**
 * One `Store.charge` step over a pure algorithm: the units the limit can admit now (`peek`'s
 * `remaining`), at most `cost` of them, consumed at once. Never below zero: the rest is forgiven.
 * Returns the state to write (`UNCHANGED` when nothing was taken) and the units taken. Stores that
 * run TypeScript call it inside their transaction; the Redis store's charge script is its twin.
 */
export function chargeStep(
  call: LimitCall,
  state: unknown,
  now: number,
): { state: StateWrite; taken: number } {
  const left = call.algorithm.peek(state, now, 1, call.policy).remaining;
  const take = Math.min(call.cost, left);
  if (take <= 0) return { state: UNCHANGED, taken: 0 };
  const step = call.algorithm.consume(state, now, take, call.policy);
  // `remaining` said these units fit; an algorithm that disagrees takes nothing rather than refuse.
  if (!step.decision.allowed) return { state: UNCHANGED, taken: 0 };
  return { state: step.state, taken: take };
}

import type { AlgorithmKind } from './algorithm-kinds.js';
import type { Decision } from './decision.js';

/**
 * Floating-point slack, in milliseconds, for "is it time yet" comparisons; every algorithm compares
 * in time units (never in tokens, where the slack would scale with the refill rate). Times are
 * epoch-scale (1.7e12 ms, one ulp = 2.4e-4 ms) and refill steps such as 1000/7 ms are inexact,
 * so a state built by a burst of additions drifts by about 1.2e-4 ms per addition; 0.01 ms
 * absorbs that for bursts of ~80 and more, and is far below the whole milliseconds that
 * `ceilMs` reports (it subtracts the same slack, so `retryAfter` stays exact). The Lua twins
 * use the same constant, so both stores agree to the bit. Algorithms whose unit of admission is
 * shorter than 2 × EPSILON use half a unit instead ({@link slackFor}).
 */
export const EPSILON = 0.01;

/**
 * The slack of an algorithm whose unit of admission takes `unit` ms (a token's refill, an
 * emission interval): EPSILON, or half a unit when that is less. Above 50 units per ms per key,
 * EPSILON alone would be worth whole units, admitted at one instant beyond the limit
 * (`gcra({ rate: 1_000_000, period: '1s', burst: 10 })` admitted 20).
 */
export function slackFor(unit: number): number {
  return Math.min(EPSILON, unit / 2);
}

/** The result of one pure step. */
export interface Transition<S> {
  /** The decision for this request on this limit alone. */
  readonly decision: Decision;
  /**
   * The state to store. When the decision is allowed, this is the state after consuming; when it
   * is refused, it is the state after the refusal (usually the input unchanged; strict token
   * buckets restart their refill clock). `undefined` means "no state": delete the key.
   */
  readonly state: S | undefined;
}

/**
 * A rate-limit algorithm as pure functions over a small serialisable state. No I/O, no clock
 * reads, no timers: stores decide where state lives, algorithms decide what happens to it.
 *
 * A third-party store that can run TypeScript inside a transaction calls `consume` / `peek` / `ttl`
 * directly. A store that runs code elsewhere (Redis) implements `kind` + `params` in its own
 * language and must give the same answers (the Redis store proves it with a differential test).
 */
export interface Algorithm<S = unknown> {
  readonly kind: AlgorithmKind;
  /** Validated parameters, all numbers (booleans as 0/1), in a fixed order: what a script receives. */
  readonly params: Readonly<Record<string, number>>;
  /**
   * Short fingerprint of `kind` and `params`. Stores put it in the stored key (Smyte stored the
   * parameters in the key) so two deployments with different parameters never share state.
   */
  readonly fingerprint: string;
  /** The quota reported in headers (`q=` / `limit`). */
  readonly limit: number;
  /** The window of that quota in ms, reported in headers (`w=`). */
  readonly window: number;
  /** One request of `cost` units at `now`. Must not mutate `state`. */
  consume(state: S | undefined, now: number, cost: number, policy: string): Transition<S>;
  /** What `consume` would decide for `cost`, without a new state. Must not mutate `state`. */
  peek(state: S | undefined, now: number, cost: number, policy: string): Decision;
  /**
   * ms from `now` until `state` is indistinguishable from no state at all; ≤ 0 means it already
   * is and may be deleted. Stores use it for expiry (Redis `PEXPIRE`) and eviction.
   */
  ttl(state: S, now: number): number;
  /**
   * Gives back `cost` units that `consume` admitted at `now`: for a request that never ran (its
   * client went away while held in delay mode), or that a layered batch refused in another Redis
   * Cluster slot. A compensation, not a restore: it stays right when other requests have written
   * the state since. Where the units can no longer be told apart (their window has passed), it
   * gives back nothing: a refund never over-admits. Returns the new state, or `undefined` when
   * nothing is left to keep. Optional for third-party algorithms; every built-in has one.
   */
  refund?(state: S, now: number, cost: number): S | undefined;
}

/**
 * FNV-1a over the algorithm's kind and parameters, in base 36. Not cryptographic: it only has to
 * keep differently-configured limits apart.
 */
export function fingerprint(kind: AlgorithmKind, params: Readonly<Record<string, number>>): string {
  let text = kind;
  for (const [name, value] of Object.entries(params)) text += `|${name}=${value}`;
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(36);
}

/**
 * The same algorithm, with the limit's name bound into its fingerprint: two limits with equal
 * parameters but different names (`login` and `reset-password`, both 5 per 15 minutes per IP) never
 * share state, while every limit of one user key still shares a key in Redis except for the
 * fingerprint, which stays outside the Cluster hash tag. `Limiter` binds every limit's name (the
 * adapters build on it). A limit named for its algorithm's kind, the default name, keeps the
 * algorithm itself: an unnamed limit's state is where the algorithm alone puts it.
 */
export function bindName<S>(algorithm: Algorithm<S>, name: string): Algorithm<S> {
  if (name === algorithm.kind) return algorithm;
  let hash = 0x811c9dc5;
  const text = `${algorithm.fingerprint}|name=${name}`;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return Object.freeze({
    ...algorithm,
    fingerprint: `${algorithm.fingerprint}.${(hash >>> 0).toString(36)}`,
  });
}

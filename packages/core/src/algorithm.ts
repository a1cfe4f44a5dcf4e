import type { AlgorithmKind } from './algorithm-kinds.js';
import type { Decision } from './decision.js';

// The time comparisons' slack lives beside the decision's rounding (decision.ts reads it too).
export { EPSILON, slackFor } from './slack.js';

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

import { EPSILON } from './slack.js';

/** Why a request was refused. `undefined` when it was allowed. */
export type RefusalReason =
  /** The limit is used up for now; `retryAfter` says when a request of this cost fits. */
  | 'rate-limited'
  /** The cost is above what the limit can ever admit; retrying will not help (`retryAfter` is -1). */
  | 'cost-exceeds-limit'
  /** Too many requests in flight for this key (concurrency limit). */
  | 'concurrency'
  /** Dropped by a load shedder to protect the service (answered with 503, not 429). */
  | 'shed'
  /** The store failed and the failure policy refused the request. */
  | 'store-unavailable'
  /**
   * The key is blocked: its limit refused it earlier and has a `block` duration that has not run
   * out (`retryAfter` is when the block ends). The refusal that starts a block is `'rate-limited'`.
   */
  | 'blocked';

/**
 * The one answer every limiter, shedder and store gives. Adapters translate it into HTTP and never
 * recompute it. Times are whole milliseconds, rounded up so that a client that waits `retryAfter`
 * is never early.
 */
export interface Decision {
  /** Whether the request may proceed (possibly after `delay`). */
  readonly allowed: boolean;
  /** The quota of the limit that decided: capacity, burst or requests per window. */
  readonly limit: number;
  /** Whole units left after this request; a refused request consumes nothing, so it reports the units left now. */
  readonly remaining: number;
  /** ms until the limit's state is as fresh as if it had never been used (0 when it is). */
  readonly resetAfter: number;
  /** ms until a request of the same cost could be allowed; 0 when allowed, ≥ 1 when refused, -1 when never. */
  readonly retryAfter: number;
  /** ms the caller should hold the request before serving it (queue algorithms); 0 otherwise. */
  readonly delay: number;
  /** Name of the limit that decided (the limit's `name`, else its algorithm's). */
  readonly policy: string;
  /** Why the request was refused; `undefined` when allowed. */
  readonly reason: RefusalReason | undefined;
  /**
   * Every layered limit's own decision, in the order the limits were given. Empty on the
   * per-limit decisions themselves.
   */
  readonly limits: readonly Decision[];
  /**
   * `true` on the per-limit decision of a limit in shadow mode (`enforce: false`): computed and
   * reported, but it never refuses the request nor vetoes the other limits. Absent otherwise.
   */
  readonly shadow?: true;
}

const NO_LIMITS: readonly Decision[] = Object.freeze([]);

/** Not a number, to make `remaining` a tagged field (see below `MadeDecision`). */
const TAGGED = undefined as unknown as number;

/**
 * The built-in `Decision`: the fields users read, and `limits` kept apart. A check of one limit
 * (the commonest there is) answers with its limit's own decision, and the list that names it in
 * `limits` (a copy of it whose own `limits` is empty) is made only when someone reads it: one
 * object per check instead of three (issue 36). `limits` is therefore a getter, not an own field:
 * `JSON.stringify` includes it (`toJSON`), while a spread `{ ...decision }`, `Object.keys` and
 * `structuredClone` copy the other fields without it (read `decision.limits`, or clone
 * `decision.toJSON()`). Every field is written in the constructor, in one order: one V8 shape.
 */
class MadeDecision implements Decision {
  /**
   * Every layered limit's own decision; `NO_LIMITS` on a per-limit decision; `null` on a limit's
   * own decision adopted as the answer of a check of that one limit (`limits` then makes a copy).
   */
  #limits: readonly Decision[] | null;
  declare readonly shadow?: true;

  constructor(
    readonly allowed: boolean,
    readonly limit: number,
    readonly remaining: number,
    readonly resetAfter: number,
    readonly retryAfter: number,
    readonly delay: number,
    readonly policy: string,
    readonly reason: RefusalReason | undefined,
    limits: readonly Decision[] | null,
  ) {
    this.#limits = limits;
  }

  get limits(): readonly Decision[] {
    const limits = this.#limits;
    if (limits !== null) return limits;
    const own = new MadeDecision(
      this.allowed,
      this.limit,
      this.remaining,
      this.resetAfter,
      this.retryAfter,
      this.delay,
      this.policy,
      this.reason,
      NO_LIMITS,
    );
    this.#limits = [own];
    return this.#limits;
  }

  /** The fields and `limits` (and `shadow` where set), in the order of the `Decision` type. */
  toJSON(): Record<string, unknown> {
    const json: Record<string, unknown> = {
      allowed: this.allowed,
      limit: this.limit,
      remaining: this.remaining,
      resetAfter: this.resetAfter,
      retryAfter: this.retryAfter,
      delay: this.delay,
      policy: this.policy,
      reason: this.reason,
      limits: this.limits,
    };
    if (this.shadow === true) json.shadow = true;
    return json;
  }

  /**
   * `decision` as the answer of a check of its one limit, without a copy: a per-limit decision the
   * store has just made for this call (never shared: see `Store.consume`). `undefined` when it is
   * not a fresh per-limit decision of this class (a third-party store's object, a shadow limit's).
   */
  static adopt(decision: Decision): Decision | undefined {
    if (!(decision instanceof MadeDecision) || decision.#limits !== NO_LIMITS || decision.shadow === true)
      return undefined;
    decision.#limits = null;
    return decision;
  }

  /** `decision` as a per-limit decision: an adopted one's own copy (its `limits` empty). */
  static perLimit(decision: Decision): Decision {
    return decision instanceof MadeDecision && decision.#limits === null ? decision.limits[0]! : decision;
  }
}

/**
 * `remaining` is made a tagged field before any decision is: V8 keeps a field that has only held
 * numbers as a double, and then gives each new object a heap number for it (16 bytes a decision).
 * The first `remaining` a step computes from a state kept in a double array is a double (fixed
 * window's was: 128 bytes a check instead of 112), and one algorithm's double made the field a
 * double for every algorithm of the process. A tagged field holds a whole number as a small
 * integer in the object itself. The other number fields are left to V8: made tagged too, the hot
 * token bucket of bench:alloc (a `resetAfter` past 2³¹ ms) took 16 bytes more per check.
 * This decision is never used.
 */
new MadeDecision(false, 0, TAGGED, 0, 0, 0, '', undefined, NO_LIMITS);

/** Builds a per-limit decision. Always creates every field, in one order, so V8 sees one shape. */
export function decide(
  allowed: boolean,
  limit: number,
  remaining: number,
  resetAfter: number,
  retryAfter: number,
  delay: number,
  policy: string,
  reason: RefusalReason | undefined,
): Decision {
  return new MadeDecision(
    allowed,
    limit,
    remaining,
    resetAfter,
    retryAfter,
    delay,
    policy,
    reason,
    NO_LIMITS,
  );
}

/**
 * `decision` with some of its fields replaced: the `Decision` form of `{ ...decision, ...fields }`,
 * which would drop `limits` (a getter) and `shadow` stays as it was. A per-limit decision stays one.
 */
export function withFields(
  decision: Decision,
  fields: Partial<Omit<Decision, 'limits' | 'shadow'>>,
  limits: readonly Decision[] = decision.limits,
): Decision {
  const made = new MadeDecision(
    fields.allowed ?? decision.allowed,
    fields.limit ?? decision.limit,
    fields.remaining ?? decision.remaining,
    fields.resetAfter ?? decision.resetAfter,
    fields.retryAfter ?? decision.retryAfter,
    fields.delay ?? decision.delay,
    fields.policy ?? decision.policy,
    'reason' in fields ? fields.reason : decision.reason,
    limits.length === 0 ? NO_LIMITS : limits,
  );
  if (decision.shadow === true) (made as { shadow?: true }).shadow = true;
  return made;
}

/** An admission with no wait: what every algorithm answers when the cost fits now. */
export function admitted(limit: number, remaining: number, resetAfter: number, policy: string): Decision {
  return new MadeDecision(true, limit, remaining, resetAfter, 0, 0, policy, undefined, NO_LIMITS);
}

/** The refusal of a cost larger than the limit could ever admit: `retryAfter` -1, never retry. */
export function costExceedsLimit(
  limit: number,
  remaining: number,
  resetAfter: number,
  policy: string,
): Decision {
  return new MadeDecision(
    false,
    limit,
    remaining,
    resetAfter,
    -1,
    0,
    policy,
    'cost-exceeds-limit',
    NO_LIMITS,
  );
}

/**
 * Combines the per-limit decisions of one layered check. The combined decision copies the limit
 * that matters most: when refused, the refused limit the caller must wait longest for; when
 * allowed, the one with the fewest units left (ties: the one that takes longest to reset).
 * Shadow decisions (`shadow: true`) are listed in `limits` but decide nothing: when every limit
 * is in shadow mode, the combined decision is allowed and copies the numbers of the shadow limit
 * that matters most.
 */
export function combine(decisions: readonly Decision[]): Decision {
  if (decisions.length === 1) return combineOne(decisions[0]!);
  let chosen: Decision | undefined;
  let delay = 0;
  for (let i = 0; i < decisions.length; i++) {
    const d = decisions[i]!;
    if (d.shadow === true) continue;
    if (d.delay > delay) delay = d.delay;
    if (chosen === undefined || moreRestrictive(d, chosen)) chosen = d;
  }
  if (chosen === undefined) return shadowOnly(decisions);
  return new MadeDecision(
    chosen.allowed,
    chosen.limit,
    chosen.remaining,
    chosen.resetAfter,
    chosen.retryAfter,
    delay,
    chosen.policy,
    chosen.reason,
    decisions,
  );
}

/**
 * `combine([decision])`, without the loop: the combined decision has the fields of the one
 * limit's and lists it alone in `limits`. A fresh per-limit decision of `decide` is the answer
 * itself (`limits` is made when read); any other is copied. The commonest check there is (one
 * limit, a string key) takes this path on every call.
 */
export function combineOne(decision: Decision): Decision {
  if (decision.shadow === true) return shadowOnly([decision]);
  return (
    MadeDecision.adopt(decision) ??
    new MadeDecision(
      decision.allowed,
      decision.limit,
      decision.remaining,
      decision.resetAfter,
      decision.retryAfter,
      decision.delay,
      decision.policy,
      decision.reason,
      [MadeDecision.perLimit(decision)],
    )
  );
}

/** The combined decision of a check whose limits are all in shadow mode: allowed, whatever they say. */
function shadowOnly(decisions: readonly Decision[]): Decision {
  let chosen = decisions[0]!;
  for (let i = 1; i < decisions.length; i++)
    if (moreRestrictive(decisions[i]!, chosen)) chosen = decisions[i]!;
  return new MadeDecision(
    true,
    chosen.limit,
    chosen.remaining,
    chosen.resetAfter,
    0,
    0,
    chosen.policy,
    undefined,
    decisions,
  );
}

/** Marks a per-limit decision as a shadow limit's (see `Decision.shadow`). */
export function shadowed(decision: Decision): Decision {
  const made = withFields(decision, {});
  (made as { shadow?: true }).shadow = true;
  return made;
}

function moreRestrictive(a: Decision, b: Decision): boolean {
  if (a.allowed !== b.allowed) return !a.allowed;
  if (!a.allowed) {
    // A limit that can never admit this cost (-1) outranks any finite wait.
    if (a.retryAfter === -1 || b.retryAfter === -1) return a.retryAfter === -1 && b.retryAfter !== -1;
    return a.retryAfter > b.retryAfter;
  }
  if (a.remaining !== b.remaining) return a.remaining < b.remaining;
  return a.resetAfter > b.resetAfter;
}

/**
 * ms → whole ms, rounded up, never negative. Values within `slack` above a whole ms round down
 * to it: the algorithms admit a request `slack` early (`EPSILON`, or less: see `slackFor`), so a
 * caller who waits exactly `retryAfter` is admitted, and one who waits 1 ms less is not.
 */
export function ceilMs(ms: number, slack = EPSILON): number {
  return ms <= slack ? 0 : Math.ceil(ms - slack);
}

/**
 * `retryAfter` of a refusal: `ceilMs`, and never below 1. A refusal's wait is above the slack in
 * exact arithmetic (else the request would have been admitted), but the doubles of epoch-scale
 * times can round it to the slack or less: 0 would tell the caller to retry at once, to be
 * refused again. 1 ms is never early, since the wait it replaces is within a rounding of zero.
 */
export function retryMs(ms: number, slack = EPSILON): number {
  return Math.max(1, ceilMs(ms, slack));
}

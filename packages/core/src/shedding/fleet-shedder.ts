import { EPSILON } from '../algorithm.js';
import { acquireLease, requireLeases } from '../concurrency/acquire-lease.js';
import { nameOption, readNow } from '../concurrency/common-options.js';
import type { Lease } from '../concurrency/lease.js';
import { leaseId } from '../concurrency/lease-id.js';
import type { LeaseAcquire, LeaseStore } from '../concurrency/lease-store.js';
import { type Decision, decide } from '../decision.js';
import { type Duration, parseDuration } from '../duration.js';
import { describeValue, ErrorCode, SluiceError } from '../errors.js';
import { MemoryStore } from '../memory-store.js';
import type { MaybePromise, Store } from '../store.js';
import { assertKnownOptions, functionOption, integerOption, requireOption } from '../validate.js';
import { DEFAULT_PRIORITIES, lookupPriority, prioritiesOption, priorityIndex } from './priorities.js';
import { type ResolvedRetryRange, type RetryRange, retryHint, retryRangeOption } from './retry-hint.js';

export interface FleetShedderOptions {
  /**
   * Requests in flight at once across the fleet (every process sharing the store), all
   * priorities together: what the fleet can serve at once. Integer ≥ 1.
   */
  budget: number;
  /**
   * Priority names, most important first. A request's priority comes from the caller's
   * classifier (payments `'critical'`, analytics `'low'`).
   * @default ['critical', 'normal', 'low']
   */
  priorities?: readonly string[];
  /**
   * Share of `budget` (0–1) that each priority holds back from every less important one. A
   * priority is admitted while the in-flight count is below
   * `budget × (1 − the reserves of all more important priorities)`, so the most important one can
   * always use the whole budget and the reserves are never taken by traffic below them. The
   * least important priority reserves nothing; the reserves must leave it at least one slot.
   * @default { critical: 0.2, normal: 0.2 } (critical 100 %, normal 80 %, low 60 % of the budget);
   *   required with custom `priorities`
   */
  reserve?: Readonly<Record<string, number>>;
  /** How long a lease may be held before it counts as lost. @default '60s' */
  ttl?: Duration;
  /** The range a shed request's `retryAfter` is drawn from. @default { min: '1s', max: '5s' } */
  retryAfter?: RetryRange;
  /** Uniform draws in [0, 1) for the retry jitter. @default Math.random */
  random?: () => number;
  /** Shown in `decision.policy`, and the lease space in the store. @default 'fleet' */
  name?: string;
  /** Where leases live: a shared store (Redis) makes the budget fleet-wide. @default a new `MemoryStore()` */
  store?: Store;
  /** Told when a release fails in the store (the lease then expires after `ttl`). @default none */
  onError?: (error: unknown) => void;
}

/** The options that shape the shedder (all but `onError`): what an HTTP guard builds one from. */
export const FLEET_SHEDDER_OPTIONS = [
  'budget',
  'priorities',
  'reserve',
  'ttl',
  'retryAfter',
  'random',
  'name',
  'store',
] as const satisfies readonly (keyof FleetShedderOptions)[];
const KNOWN = [...FLEET_SHEDDER_OPTIONS, 'onError'] as const satisfies readonly (keyof FleetShedderOptions)[];
const ACQUIRE_KNOWN = ['now'] as const;

/** The one lease set of a fleet shedder, inside its space. */
const FLEET_KEY = 'in-flight';

/**
 * Stripe's fleet usage load shedder: one global in-flight budget, with a share of it reserved for
 * the more important traffic. Every request takes a lease (so the count is the whole fleet's);
 * a request is refused with reason `'shed'` (HTTP 503) once the count reaches its priority's
 * ceiling, so critical traffic always finds room while the rest is turned away.
 * @example
 * const shedder = new FleetShedder({ budget: 400, store: redisStore });
 * const lease = await shedder.acquire(isPayment(req) ? 'critical' : 'low');
 * if (!lease.decision.allowed) return reply503(lease.decision);
 * try { await work(); } finally { await lease.release(); }
 */
export class FleetShedder {
  readonly budget: number;
  readonly priorities: readonly string[];
  /** In-flight count at which each priority is refused, in the order of `priorities`. */
  readonly ceilings: readonly number[];
  /** ms. */
  readonly ttl: number;
  readonly name: string;
  readonly store: Store;
  private readonly leases: LeaseStore;
  private readonly index: ReadonlyMap<string, number>;
  private readonly calls: readonly Omit<LeaseAcquire, 'id'>[];
  private readonly retryRange: ResolvedRetryRange;
  private readonly random: () => number;
  private readonly onError: ((error: unknown) => void) | undefined;
  private readonly shed = (refused: Decision): Decision =>
    decide(
      false,
      refused.limit,
      0,
      refused.resetAfter,
      retryHint(this.retryRange, this.random()),
      0,
      refused.policy,
      'shed',
    );

  constructor(options: FleetShedderOptions) {
    assertKnownOptions('FleetShedder', options, KNOWN);
    this.budget = integerOption('budget', requireOption('budget', options.budget));
    this.priorities = prioritiesOption(options.priorities ?? DEFAULT_PRIORITIES, 1);
    if (options.priorities !== undefined && options.reserve === undefined) {
      throw new SluiceError(
        ErrorCode.MISSING_OPTION,
        'reserve is required with custom priorities: say what share each one holds back',
        { option: 'reserve' },
      );
    }
    this.ceilings = ceilingsOf(
      this.budget,
      this.priorities,
      options.reserve ?? { critical: 0.2, normal: 0.2 },
    );
    this.ttl = parseDuration('ttl', options.ttl ?? '60s');
    this.retryRange = retryRangeOption(options.retryAfter);
    this.random = functionOption('random', options.random) ?? Math.random;
    this.name = nameOption(options.name ?? 'fleet');
    this.store = options.store ?? new MemoryStore();
    this.leases = requireLeases('FleetShedder', this.store);
    this.onError = functionOption('onError', options.onError);
    this.index = priorityIndex(this.priorities);
    this.calls = this.ceilings.map((limit) => ({
      space: this.name,
      key: FLEET_KEY,
      limit,
      ttl: this.ttl,
      retryAfter: this.retryRange[1],
      policy: this.name,
    }));
  }

  /**
   * Takes a slot of the budget for a request of this priority, or sheds it. Release the lease
   * when the request ends, however it ends.
   */
  acquire(priority: string, options?: { now?: number }): MaybePromise<Lease> {
    const at = lookupPriority(this.index, this.priorities, priority);
    const now = readNow(options, ACQUIRE_KNOWN);
    return acquireLease(this.leases, { ...this.calls[at]!, id: leaseId() }, now, this.onError, this.shed);
  }

  /**
   * The budget as a request of this priority would see it now, without taking a slot: `limit` is
   * the priority's ceiling and `remaining` the slots left under it.
   */
  peek(priority: string, options?: { now?: number }): MaybePromise<Decision> {
    const at = lookupPriority(this.index, this.priorities, priority);
    return this.leases.peek({ ...this.calls[at]!, id: '' }, readNow(options, ACQUIRE_KNOWN));
  }

  /** Forgets every lease (after a deploy that changed the budget, say). */
  reset(): MaybePromise<void> {
    return this.leases.reset(this.name, FLEET_KEY);
  }
}

/** Each priority's ceiling: the budget less the reserves of every more important priority. */
function ceilingsOf(
  budget: number,
  priorities: readonly string[],
  reserve: Readonly<Record<string, number>>,
): number[] {
  if (reserve === null || typeof reserve !== 'object' || Array.isArray(reserve)) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `reserve must be an object of priority → share; got ${describeValue(reserve)}`,
      { option: 'reserve', value: reserve },
    );
  }
  const last = priorities[priorities.length - 1]!;
  for (const [name, share] of Object.entries(reserve)) {
    const option = `reserve.${name}`;
    if (!priorities.includes(name)) {
      throw new SluiceError(
        ErrorCode.INVALID_OPTION,
        `${option}: no priority is named ${JSON.stringify(name)}; priorities: ${priorities.join(', ')}`,
        { option, value: share },
      );
    }
    if (typeof share !== 'number' || !Number.isFinite(share) || share < 0 || share > 1) {
      throw new SluiceError(
        ErrorCode.INVALID_OPTION,
        `${option} must be a share from 0 to 1; got ${describeValue(share)}`,
        { option, value: share },
      );
    }
    if (name === last && share !== 0) {
      throw new SluiceError(
        ErrorCode.INVALID_OPTION,
        `${option}: the least important priority has nothing below it to hold a reserve from; got ${share}`,
        { option, value: share },
      );
    }
  }
  let reserved = 0;
  return priorities.map((name) => {
    const ceiling = Math.floor(budget * (1 - reserved) + EPSILON);
    if (ceiling < 1) {
      throw new SluiceError(
        ErrorCode.INVALID_OPTION,
        `reserve leaves priority ${JSON.stringify(name)} no slot of a budget of ${budget} (reserved above it: ${reserved}); lower the reserves or raise the budget`,
        { option: 'reserve', value: reserve },
      );
    }
    reserved += reserve[name] ?? 0;
    return ceiling;
  });
}

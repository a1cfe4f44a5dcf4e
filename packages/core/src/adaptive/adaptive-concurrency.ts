import { nameOption, readNow } from '../concurrency/common-options.js';
import type { Lease } from '../concurrency/lease.js';
import { decide } from '../decision.js';
import { type Duration, parseDuration } from '../duration.js';
import { describeValue, ErrorCode, SluiceError } from '../errors.js';
import { lookupPriority, priorityIndex } from '../shedding/priorities.js';
import {
  type ResolvedRetryRange,
  type RetryRange,
  retryHint,
  retryRangeOption,
} from '../shedding/retry-hint.js';
import { assertKnownOptions, assertTime, booleanOption, functionOption } from '../validate.js';
import type { LimitController } from './controller.js';
import { type DemandState, headroom, NO_DEMAND, recentPeak, recordAsk } from './partition-demand.js';
import { admits, guaranteedSlots, type PartitionPlan, partitionsOption, SINGLE } from './partitions.js';
import { vegas } from './vegas.js';

export interface AdaptiveConcurrencyOptions {
  /**
   * What finds the limit: `vegas()`, `gradient2()`, `aimd()` or `envoyGradient()`, each with its
   * own options.
   * @default vegas() (Netflix concurrency-limits' default)
   */
  controller?: LimitController;
  /**
   * Priority → guaranteed share of the limit (0–1, adding up to at most 1), most important first
   * by convention. A partition below its share is admitted whenever the limit has room; above
   * it, it borrows what the others leave unused, never what one that has demand keeps for itself:
   * its recent peak (the most it asked for at once over the last one to two `demandWindow`s) and
   * ⌈√peak⌉ slots of headroom (at least 1), up to its share.
   * With partitions, `acquire` takes the request's priority.
   * @default none: one partition, the whole limit
   * @example { critical: 0.8, low: 0.2 }
   */
  partitions?: Readonly<Record<string, number>>;
  /** How long after its last request a partition counts as having demand (what it keeps for itself is then not lent), and how far back its recent peak reaches (one to two of these): ms or `'1s'`… @default '1s' */
  demandWindow?: Duration;
  /** The range a refused request's `retryAfter` is drawn from. @default { min: '1s', max: '5s' } */
  retryAfter?: RetryRange;
  /** Uniform draws in [0, 1): the controller's jitter and the retry hints. @default Math.random */
  random?: () => number;
  /** A monotonic clock in ms, for calls without `now`. @default performance.now */
  clock?: () => number;
  /** Shown in `decision.policy`. @default 'adaptive' */
  name?: string;
  /**
   * How long a lease may be held before its slot is taken back (a release lost to a bug, a
   * request that never ends): ms or `'60s'`…, longer than your slowest request. An expired lease
   * counts as a drop (a request that outlived it timed out) ending at its expiry; its later
   * release frees nothing and tells the controller nothing. Expired leases are found on `acquire`.
   * @default '60s' (as `ConcurrencyLimiter`)
   */
  ttl?: Duration;
  /**
   * A request that ran longer than this counts as a drop (a timeout: the controllers back off),
   * not as a latency: ms or `'2s'`…
   * @default none
   */
  timeout?: Duration;
  /**
   * An overload signal from 0 to 1, such as `eventLoopDelaySignal({ saturated: '100ms' })`, read
   * at most once every 100 ms, when a request ends: while its last reading is 1, every request
   * that ends counts as a drop. For a process whose own event loop is the bottleneck, which
   * request latency shows only late. A signal that throws reads as 0. You own it (`close()` it).
   * @default none
   */
  overloadSignal?: () => number;
}

/** How often `overloadSignal` is read, at most: ms. */
const SIGNAL_INTERVAL = 100;

/** The options that build an `AdaptiveConcurrency` (an HTTP guard's engine options). */
export const ADAPTIVE_CONCURRENCY_OPTIONS = [
  'controller',
  'partitions',
  'demandWindow',
  'retryAfter',
  'random',
  'clock',
  'name',
  'ttl',
  'timeout',
  'overloadSignal',
] as const satisfies readonly (keyof AdaptiveConcurrencyOptions)[];
const ACQUIRE_KNOWN = ['now'] as const;
const RELEASE_KNOWN = ['now', 'dropped', 'ignore'] as const satisfies readonly (keyof ReleaseOutcome)[];

/** How a request ended, told to `release`. */
export interface ReleaseOutcome {
  /** ms, on the clock `acquire` used. @default the limiter's clock */
  now?: number;
  /** A drop (a timeout, a 5xx the app marks, a refusal by a downstream): the controllers back off. @default false */
  dropped?: boolean;
  /** Frees the slot but tells the controller nothing (the client went away: not a latency). @default false */
  ignore?: boolean;
}

/** A slot of the adaptive limit. A plain `Lease` too: `release(now)` reports a success. */
export interface AdaptiveLease extends Lease {
  /**
   * Gives the slot back and reports the request's RTT (from acquire to this call) or its drop.
   * Idempotent: only the first call counts; it answers whether it freed a slot.
   */
  release(outcome?: number | ReleaseOutcome): boolean;
}

/** One partition's state, for metrics. */
export interface PartitionSnapshot {
  readonly share: number;
  /** Slots guaranteed at the current limit. */
  readonly guaranteed: number;
  readonly inFlight: number;
}

/**
 * A concurrency limit found from latency: each finished request's RTT (or its drop) goes to a
 * controller, whose limit caps the requests in flight; above it, requests are refused with
 * reason `'shed'` (HTTP 503) and a jittered `retryAfter`. With `partitions`, each priority has a
 * guaranteed share and borrows what others leave unused; in flight never exceeds the limit, even
 * when it shrinks while leases are out (new requests then wait for in flight to fall below it).
 * @example
 * const limiter = new AdaptiveConcurrency({ controller: gradient2(), partitions: { critical: 0.8, low: 0.2 } });
 * const lease = limiter.acquire(isPayment(req) ? 'critical' : 'low');
 * if (!lease.decision.allowed) return reply503(lease.decision);
 * try { await work(); lease.release(); } catch (e) { lease.release({ dropped: true }); throw e; }
 */
export class AdaptiveConcurrency {
  readonly controller: LimitController;
  readonly name: string;
  /** Priority names, in the order of `partitions` (empty without partitions). */
  readonly priorities: readonly string[];
  /** ms. */
  readonly demandWindow: number;
  /** ms. */
  readonly ttl: number;
  /** ms; `undefined`: none. */
  readonly timeout: number | undefined;
  private readonly overloadSignal: (() => number) | undefined;
  /** When `overloadSignal` was last read (ms), and whether it read 1. */
  private signalRead = Number.NEGATIVE_INFINITY;
  private overloaded = false;
  private readonly plan: PartitionPlan;
  private readonly index: ReadonlyMap<string, number>;
  private readonly retryRange: ResolvedRetryRange;
  private readonly random: () => number;
  private readonly clock: () => number;
  private state: unknown;
  /** Whether the controller has been started on the first request's time (see `acquire`). */
  private started = false;
  private current: number;
  private guaranteed: number[];
  private total = 0;
  private readonly counts: number[];
  /** ms of each partition's last acquire; -Infinity before one. */
  private readonly asked: number[];
  /** Each partition's recent peak of slots wanted at once (see `partition-demand.ts`). */
  private readonly demand: DemandState[];
  /**
   * The leases out, in the order they were taken, which is their expiry's order (one ttl, time
   * that does not run back): the oldest expire first, so a sweep stops at the first still valid.
   */
  private readonly out = new Map<OutLease, number>();

  constructor(options: AdaptiveConcurrencyOptions = {}) {
    assertKnownOptions('AdaptiveConcurrency', options, ADAPTIVE_CONCURRENCY_OPTIONS);
    this.controller = controllerOption(options.controller ?? vegas());
    this.plan = options.partitions === undefined ? SINGLE : partitionsOption(options.partitions);
    this.priorities = options.partitions === undefined ? [] : this.plan.names;
    this.index = priorityIndex(this.plan.names);
    this.demandWindow = parseDuration('demandWindow', options.demandWindow ?? '1s');
    this.retryRange = retryRangeOption(options.retryAfter);
    this.random = functionOption('random', options.random) ?? Math.random;
    this.clock = functionOption('clock', options.clock) ?? (() => performance.now());
    this.name = nameOption(options.name ?? 'adaptive');
    this.ttl = parseDuration('ttl', options.ttl ?? '60s');
    this.timeout = options.timeout === undefined ? undefined : parseDuration('timeout', options.timeout);
    this.overloadSignal = functionOption('overloadSignal', options.overloadSignal);
    this.counts = this.plan.names.map(() => 0);
    this.asked = this.plan.names.map(() => Number.NEGATIVE_INFINITY);
    this.demand = this.plan.names.map(() => NO_DEMAND);
    this.state = this.controller.start(this.clock(), this.random());
    this.current = this.controller.limit(this.state);
    this.guaranteed = guaranteedSlots(this.current, this.plan.shares);
  }

  /**
   * Takes a slot for a request of this priority (none without partitions), or refuses it. Release
   * the lease when the request ends, however it ends: the limit learns from it. A lease not
   * released within `ttl` loses its slot (counted as a drop).
   */
  acquire(priority?: string, options?: { now?: number }): AdaptiveLease {
    const p = this.partitionOf(priority);
    const now = readNow(options, ACQUIRE_KNOWN) ?? this.clock();
    if (!this.started) {
      // The controller's windows and epochs start on the requests' own time line, which may be
      // the caller's (`now` passed in) rather than this limiter's clock.
      this.started = true;
      this.state = this.controller.start(now, this.random());
      this.setLimit(this.controller.limit(this.state));
    }
    this.asked[p] = now;
    this.expire(now);
    this.demand[p] = recordAsk(this.demand[p]!, now, this.counts[p]! + 1, this.demandWindow);
    const limit = this.current;
    if (!admits(p, limit, this.total, this.counts, this.guaranteed, (q) => this.wanted(q, now))) {
      // Nothing is left for this request, whatever the limit's free slots: they are reserved.
      const retryAfter = retryHint(this.retryRange, this.random());
      const decision = decide(false, limit, 0, 0, retryAfter, 0, this.name, 'shed');
      return { decision, release: () => false };
    }
    this.total += 1;
    this.counts[p]! += 1;
    const inFlight = this.total;
    const decision = decide(true, limit, Math.max(0, limit - inFlight), 0, 0, 0, this.name, undefined);
    const entry: OutLease = { p, start: now, inFlight };
    this.out.set(entry, now + this.ttl);
    return {
      decision,
      release: (outcome?: number | ReleaseOutcome): boolean => {
        if (!this.out.has(entry)) return false;
        const { end, dropped, ignore } = this.readOutcome(outcome);
        this.free(entry);
        if (!ignore) this.learn({ start: now, end, inFlight, dropped });
        return true;
      },
    };
  }

  /** The concurrency limit now. */
  get limit(): number {
    return this.current;
  }

  /** Requests in flight now, all partitions together. */
  get inFlight(): number {
    return this.total;
  }

  /** The controller's no-load RTT estimate, ms (`undefined` before one is known). */
  get rttNoLoad(): number | undefined {
    return this.controller.rttNoLoad(this.state);
  }

  /** Each partition's share, guarantee and in flight now (empty without partitions). */
  partitions(): Record<string, PartitionSnapshot> {
    const out: Record<string, PartitionSnapshot> = {};
    this.priorities.forEach((name, i) => {
      out[name] = { share: this.plan.shares[i]!, guaranteed: this.guaranteed[i]!, inFlight: this.counts[i]! };
    });
    return out;
  }

  /** Takes back the slots of leases past their ttl at `now`, each a drop ending at its expiry. */
  private expire(now: number): void {
    for (const [entry, expires] of this.out) {
      if (expires > now) return;
      this.free(entry);
      this.learn({ start: entry.start, end: expires, inFlight: entry.inFlight, dropped: true });
    }
  }

  private free(entry: OutLease): void {
    this.out.delete(entry);
    this.total -= 1;
    this.counts[entry.p]! -= 1;
  }

  private learn(sample: { start: number; end: number; inFlight: number; dropped: boolean }): void {
    if (!sample.dropped && (this.timedOut(sample.end - sample.start) || this.overloadedAt(sample.end))) {
      sample = { ...sample, dropped: true };
    }
    this.state = this.controller.update(this.state, sample, this.random());
    this.setLimit(this.controller.limit(this.state));
  }

  private setLimit(limit: number): void {
    if (limit === this.current) return;
    this.current = limit;
    this.guaranteed = guaranteedSlots(limit, this.plan.shares);
  }

  private timedOut(rtt: number): boolean {
    return this.timeout !== undefined && rtt > this.timeout;
  }

  /** Whether the overload signal reads 1, read again if its last reading is 100 ms old. */
  private overloadedAt(now: number): boolean {
    if (this.overloadSignal === undefined) return false;
    if (now - this.signalRead >= SIGNAL_INTERVAL || now < this.signalRead) {
      this.signalRead = now;
      let reading = 0;
      try {
        reading = this.overloadSignal();
      } catch {
        // A failing signal must not fail a release (it runs when a response ends): latency still limits.
      }
      this.overloaded = reading >= 1;
    }
    return this.overloaded;
  }

  /**
   * The slots partition `q` wants at once: with demand (requests in flight, or one within
   * `demandWindow`), its recent peak (see `recentPeak`) and `headroom` above it (√ of the peak, at
   * least 1), so a burst of its requests past the peak finds slots and what it keeps grows with
   * each slot it asks for; else 0.
   */
  private wanted(q: number, now: number): number {
    if (this.counts[q]! === 0 && !(now - this.asked[q]! < this.demandWindow)) return 0;
    const peak = recentPeak(this.demand[q]!, now, this.demandWindow);
    return peak + headroom(peak);
  }

  private partitionOf(priority: string | undefined): number {
    if (this.priorities.length === 0) {
      if (priority !== undefined) {
        throw new SluiceError(
          ErrorCode.INVALID_OPTION,
          `priority needs partitions: this limiter has none; got ${describeValue(priority)}`,
          { option: 'priority', value: priority },
        );
      }
      return 0;
    }
    return lookupPriority(this.index, this.priorities, priority);
  }

  private readOutcome(outcome: number | ReleaseOutcome | undefined): {
    end: number;
    dropped: boolean;
    ignore: boolean;
  } {
    if (outcome === undefined) return { end: this.clock(), dropped: false, ignore: false };
    if (typeof outcome === 'number') {
      assertTime(outcome);
      return { end: outcome, dropped: false, ignore: false };
    }
    assertKnownOptions('release', outcome, RELEASE_KNOWN);
    if (outcome.now !== undefined) assertTime(outcome.now);
    return {
      end: outcome.now ?? this.clock(),
      dropped: booleanOption('dropped', outcome.dropped ?? false),
      ignore: booleanOption('ignore', outcome.ignore ?? false),
    };
  }
}

/** An admitted lease not yet released: its partition, when it started, in flight then (itself included). */
interface OutLease {
  readonly p: number;
  readonly start: number;
  readonly inFlight: number;
}

function controllerOption(value: LimitController): LimitController {
  const c = value as Partial<LimitController> | null;
  if (
    c === null ||
    typeof c !== 'object' ||
    typeof c.start !== 'function' ||
    typeof c.update !== 'function' ||
    typeof c.limit !== 'function' ||
    typeof c.rttNoLoad !== 'function'
  ) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `controller must be a limit controller (vegas(), gradient2(), aimd(), envoyGradient()); got ${describeValue(value)}`,
      { option: 'controller', value },
    );
  }
  return value;
}

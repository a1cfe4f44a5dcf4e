import { ConcurrencyLimiter, type ConcurrencyLimiterOptions } from '../concurrency/concurrency-limiter.js';
import { type Lease, refusedLease } from '../concurrency/lease.js';
import { type Decision, decide } from '../decision.js';
import { describeValue, ErrorCode, SluiceError } from '../errors.js';
import { FleetShedder, type FleetShedderOptions } from '../shedding/fleet-shedder.js';
import { UtilizationShedder } from '../shedding/utilization-shedder.js';
import type { MaybePromise } from '../store.js';
import { assertKnownOptions, functionOption, oneOfOption } from '../validate.js';
import {
  CONCURRENCY_ENGINE,
  CONCURRENCY_OPTIONS,
  FLEET_ENGINE,
  FLEET_OPTIONS,
  type HttpConcurrencyOptions,
  type HttpFleetShedOptions,
  type HttpGuardOptions,
  type HttpUtilizationShedOptions,
  type Priority,
  UTILIZATION_OPTIONS,
} from './guard-options.js';
import { byIp, type KeyFunction } from './keys.js';
import { type Refusal, refusal } from './problem.js';
import { type AdapterDefaults, Reporter, type RequestAccessBase } from './reporter.js';

/** The guards, by the name of their middleware (and of Fastify's plugin option and route config). */
export type GuardName = 'concurrencyLimit' | 'fleetShed' | 'utilizationShed' | 'adaptiveConcurrency';

/** Everything `HttpGuard` needs, resolved by the factories below (and `adaptiveGuard`). */
export interface GuardParts<Req> {
  readonly kind: GuardName;
  readonly name: string;
  readonly takesLeases: boolean;
  /** Takes the request's lease (or the shedder's verdict); may throw. `undefined`: not guarded. */
  readonly lease: (req: Req) => MaybePromise<Lease | undefined>;
  /** `{ limiter }` or `{ shedder }`: lets an adapter hand the same engine to another middleware. */
  readonly engine: Readonly<Record<string, unknown>>;
  /**
   * Gives an admitted lease back when the response ends, told how it ended (a guard that learns
   * from it: the adaptive concurrency limit). May throw. @default `lease.release()`
   */
  readonly release?: (lease: Lease, req: Req, status: () => number, finished: boolean) => void;
  /** Called with every decision on a lease, admitted or refused, before `onLimited`. @default none */
  readonly onDecision?: ((req: Req, decision: Decision) => void) | undefined;
}

/**
 * The request-to-lease logic every adapter shares for the concurrency limit and the two load
 * shedders, compiled once from the options: skip, key or priority, one acquire per request, the
 * failure policy, and the refusal. Adapters move its answers into their responses and release
 * admitted leases when the response ends (`takesLeases`).
 */
export class HttpGuard<Req> {
  readonly kind: GuardName;
  /** The limiter's or shedder's name: `decision.policy` and the problem body's `violated-policies`. */
  readonly name: string;
  /** Whether admitted requests take a lease to release when the response ends (not the utilization shedder). */
  readonly takesLeases: boolean;
  /** The built limiter or shedder, as an option (`{ limiter }` / `{ shedder }`). */
  readonly engine: Readonly<Record<string, unknown>>;
  private readonly lease: (req: Req) => MaybePromise<Lease | undefined>;
  private readonly give: GuardParts<Req>['release'];
  private readonly onDecision: ((req: Req, decision: Decision) => void) | undefined;
  private readonly skip: ((req: Req) => boolean) | undefined;
  private readonly failOpen: boolean;
  private readonly storeDown: Lease;
  private readonly reporter: Reporter<Req>;

  private constructor(parts: GuardParts<Req>, options: HttpGuardOptions<Req>, reporter: Reporter<Req>) {
    this.kind = parts.kind;
    this.name = parts.name;
    this.takesLeases = parts.takesLeases;
    this.engine = parts.engine;
    this.lease = parts.lease;
    this.give = parts.release;
    this.onDecision = parts.onDecision;
    this.skip = functionOption('skip', options.skip);
    this.failOpen =
      oneOfOption('storeFailure', options.storeFailure ?? 'allow', ['allow', 'deny']) === 'allow';
    this.storeDown = refusedLease(decide(false, 0, 0, 0, 1000, 0, parts.name, 'store-unavailable'));
    this.reporter = reporter;
  }

  /** @internal the factories' way in. */
  static build<Req>(
    parts: GuardParts<Req>,
    options: HttpGuardOptions<Req>,
    reporter: Reporter<Req>,
  ): HttpGuard<Req> {
    return new HttpGuard(parts, options, reporter);
  }

  /**
   * The request's lease: allowed (release it when the response ends), refused (answer with
   * `refusal`), or `undefined` (not guarded: skipped, no key, or a failure under
   * `storeFailure: 'allow'`). Synchronous on the memory store. Never throws or rejects.
   */
  enter(req: Req): MaybePromise<Lease | undefined> {
    let result: MaybePromise<Lease | undefined>;
    try {
      if (this.skip !== undefined && this.skip(req) === true) return undefined;
      result = this.lease(req);
    } catch (error) {
      return this.failed(error, req);
    }
    if (result instanceof Promise) return result.then(undefined, (error: unknown) => this.failed(error, req));
    return result;
  }

  /** Status (429 for `'concurrency'`, 503 for `'shed'`), `Retry-After` and body for a refusal. */
  refusal(decision: Decision): Refusal {
    return refusal(decision);
  }

  /** Runs `onLimited`; a throwing hook is reported to `onError`, never to the client. */
  limited(req: Req, decision: Decision): void {
    this.reporter.limited(req, decision);
  }

  /** Runs `onDecision` (where the guard takes it) for an admitted or refused lease; a throwing hook goes to `onError`. */
  decided(req: Req, decision: Decision): void {
    if (this.onDecision === undefined) return;
    try {
      this.onDecision(req, decision);
    } catch (error) {
      this.reporter.error(error, req);
    }
  }

  /**
   * Gives an admitted lease back when the response has ended: `status` reads its status code,
   * `finished` is `false` when the client left first. Never throws (a failure goes to `onError`).
   */
  ended(req: Req, lease: Lease, status: () => number, finished: boolean): void {
    if (this.give === undefined) {
      void lease.release();
      return;
    }
    try {
      this.give(lease, req, status, finished);
    } catch (error) {
      this.reporter.error(error, req);
      void lease.release();
    }
  }

  private failed(error: unknown, req: Req): Lease | undefined {
    this.reporter.error(error, req);
    return this.failOpen ? undefined : this.storeDown;
  }
}

/**
 * The concurrent requests limiter for HTTP: a lease per request and key.
 * @param adapterOptions the adapter's own option names (`handler`, `hook`), accepted beside the shared ones
 */
export function concurrencyGuard<Req>(
  where: string,
  options: HttpConcurrencyOptions<Req>,
  access: RequestAccessBase<Req>,
  defaults: AdapterDefaults<Req>,
  adapterOptions: readonly string[] = [],
): HttpGuard<Req> {
  assertKnownOptions(where, options, [...CONCURRENCY_OPTIONS, ...adapterOptions]);
  const limiter = engineOf(options, 'limiter', ConcurrencyLimiter, CONCURRENCY_ENGINE, () => {
    const inline = pick(options, CONCURRENCY_ENGINE) as Partial<ConcurrencyLimiterOptions>;
    return new ConcurrencyLimiter({
      ...inline,
      limit: inline.limit as number,
      onError: defaults.onReleaseError,
    });
  });
  if (options.key !== undefined && typeof options.key !== 'function') {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `key must be a key function such as byToken(); got ${describeValue(options.key)}`,
      { option: 'key', value: options.key },
    );
  }
  const key: KeyFunction<Req> = options.key ?? byIp();
  const reporter = new Reporter(options, defaults);
  const requestAccess = reporter.access(access);
  const lease = (req: Req): MaybePromise<Lease | undefined> => {
    const k = key(req, requestAccess);
    if (k === undefined) return undefined;
    if (typeof k !== 'string') {
      throw new SluiceError(
        ErrorCode.INVALID_KEY,
        `key must return a string or undefined; got ${describeValue(k)}`,
        { option: 'key', value: k },
      );
    }
    return limiter.acquire(k);
  };
  return HttpGuard.build(
    { kind: 'concurrencyLimit', name: limiter.name, takesLeases: true, lease, engine: { limiter } },
    options,
    reporter,
  );
}

/** The fleet usage load shedder for HTTP: a lease per request on the fleet's one budget. */
export function fleetGuard<Req>(
  where: string,
  options: HttpFleetShedOptions<Req>,
  defaults: AdapterDefaults<Req>,
  adapterOptions: readonly string[] = [],
): HttpGuard<Req> {
  assertKnownOptions(where, options, [...FLEET_OPTIONS, ...adapterOptions]);
  const shedder = engineOf(options, 'shedder', FleetShedder, FLEET_ENGINE, () => {
    const inline = pick(options, FLEET_ENGINE) as Partial<FleetShedderOptions>;
    return new FleetShedder({ ...inline, budget: inline.budget as number, onError: defaults.onReleaseError });
  });
  const priority = priorityOption(options.priority, shedder.priorities);
  const lease =
    typeof priority === 'string'
      ? () => shedder.acquire(priority)
      : (req: Req) => shedder.acquire(priority(req));
  return HttpGuard.build(
    { kind: 'fleetShed', name: shedder.name, takesLeases: true, lease, engine: { shedder } },
    options,
    new Reporter(options, defaults),
  );
}

/** The worker utilization load shedder for HTTP: a local verdict per request, no lease. */
export function utilizationGuard<Req>(
  where: string,
  options: HttpUtilizationShedOptions<Req>,
  defaults: AdapterDefaults<Req>,
  adapterOptions: readonly string[] = [],
): HttpGuard<Req> {
  assertKnownOptions(where, options, [...UTILIZATION_OPTIONS, ...adapterOptions]);
  const shedder = options.shedder;
  if (!(shedder instanceof UtilizationShedder)) {
    throw new SluiceError(
      shedder === undefined ? ErrorCode.MISSING_OPTION : ErrorCode.INVALID_OPTION,
      `shedder must be a UtilizationShedder (built by you: close() it on shutdown); got ${describeValue(shedder)}`,
      { option: 'shedder', value: shedder },
    );
  }
  const priority = priorityOption(options.priority, shedder.priorities);
  // The shedder answers allowed requests with one frozen decision: one lease object for all.
  let admitted: Lease | undefined;
  const verdict = (decision: Decision): Lease => {
    if (!decision.allowed) return refusedLease(decision);
    if (admitted?.decision !== decision) admitted = refusedLease(decision);
    return admitted;
  };
  const lease =
    typeof priority === 'string'
      ? () => verdict(shedder.check(priority))
      : (req: Req) => verdict(shedder.check(priority(req)));
  return HttpGuard.build(
    { kind: 'utilizationShed', name: shedder.name, takesLeases: false, lease, engine: { shedder } },
    options,
    new Reporter(options, defaults),
  );
}

/** The user's engine (`limiter` / `shedder`), or one built from the inline options, not both. */
export function engineOf<E, O extends object>(
  options: O,
  option: keyof O & string,
  type: abstract new (...args: never[]) => E,
  engineOptions: readonly string[],
  build: () => E,
): E {
  const given = options[option];
  const inline = engineOptions.filter(
    (name) => name !== option && (options as Record<string, unknown>)[name] !== undefined,
  );
  if (given === undefined) return build();
  if (!(given instanceof type)) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${option} must be a ${type.name}; got ${describeValue(given)}`,
      { option, value: given },
    );
  }
  if (inline.length > 0) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `give either ${option} or its options (${inline.join(', ')}), not both: ${option} already has its own`,
      { option: inline[0]!, value: (options as Record<string, unknown>)[inline[0]!] },
    );
  }
  return given as E;
}

/** The named options that are set (an `undefined` value is left out, as if not given). */
export function pick(options: object, names: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of names) {
    const value = (options as Record<string, unknown>)[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

function priorityOption<Req>(value: Priority<Req> | undefined, priorities: readonly string[]): Priority<Req> {
  if (typeof value === 'function') return value;
  if (typeof value === 'string' && priorities.includes(value)) return value;
  throw new SluiceError(
    value === undefined ? ErrorCode.MISSING_OPTION : ErrorCode.INVALID_OPTION,
    `priority must be a function of the request or one of ${priorities.map((p) => `'${p}'`).join(', ')}; got ${describeValue(value)}`,
    { option: 'priority', value },
  );
}

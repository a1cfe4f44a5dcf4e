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
import type { AdapterDefaults, RequestAccessBase } from './http-limiter.js';
import { byIp, type KeyFunction, type RequestAccess } from './keys.js';
import { type Refusal, refusal } from './problem.js';

/** The adapter's defaults for guards: its hooks, and where failed lease releases are logged. */
export interface GuardDefaults<Req> extends AdapterDefaults<Req> {
  /**
   * A lease release that failed in the store (the lease then expires after its ttl), for the
   * limiters and shedders a middleware builds from inline options. One built by the user reports
   * to its own `onError`.
   */
  onReleaseError(error: unknown): void;
}

/** Which of the three guards. */
export type GuardKind = 'concurrency' | 'fleet' | 'utilization';

/** Everything `HttpGuard` needs, resolved by the factories below. */
interface GuardParts<Req> {
  readonly kind: GuardKind;
  readonly name: string;
  readonly holdsLeases: boolean;
  /** Takes the request's lease (or the shedder's verdict); may throw. `undefined`: not guarded. */
  readonly gate: (req: Req) => MaybePromise<Lease | undefined>;
  /** `{ limiter }` or `{ shedder }`: lets an adapter hand the same engine to another middleware. */
  readonly engine: Readonly<Record<string, unknown>>;
}

/**
 * The request-to-lease logic both adapters share for the concurrency limit and the two load
 * shedders, compiled once from the options: skip, key or priority, one acquire per request, the
 * failure policy, and the refusal. Adapters move its answers into their responses and release
 * admitted leases when the response ends (`holdsLeases`).
 */
export class HttpGuard<Req> {
  readonly kind: GuardKind;
  /** The limiter's or shedder's name: `decision.policy` and the problem body's `violated-policies`. */
  readonly name: string;
  /** Whether admitted requests hold a lease to release when the response ends (not the utilization shedder). */
  readonly holdsLeases: boolean;
  /** The built limiter or shedder, as an option (`{ limiter }` / `{ shedder }`). */
  readonly engine: Readonly<Record<string, unknown>>;
  private readonly gate: (req: Req) => MaybePromise<Lease | undefined>;
  private readonly skip: ((req: Req) => boolean) | undefined;
  private readonly failOpen: boolean;
  private readonly storeDown: Lease;
  private readonly onLimited: ((req: Req, decision: Decision) => void) | undefined;
  private readonly onError: (error: Error, req: Req) => void;

  private constructor(
    parts: GuardParts<Req>,
    options: HttpGuardOptions<Req>,
    defaults: AdapterDefaults<Req>,
  ) {
    this.kind = parts.kind;
    this.name = parts.name;
    this.holdsLeases = parts.holdsLeases;
    this.engine = parts.engine;
    this.gate = parts.gate;
    this.skip = functionOption('skip', options.skip);
    this.failOpen =
      oneOfOption('storeFailure', options.storeFailure ?? 'allow', ['allow', 'deny']) === 'allow';
    this.storeDown = refusedLease(decide(false, 0, 0, 0, 1000, 0, parts.name, 'store-unavailable'));
    this.onLimited = functionOption('onLimited', options.onLimited);
    this.onError = functionOption('onError', options.onError) ?? defaults.onError;
  }

  /** @internal the factories' way in. */
  static build<Req>(
    parts: GuardParts<Req>,
    options: HttpGuardOptions<Req>,
    defaults: AdapterDefaults<Req>,
  ): HttpGuard<Req> {
    return new HttpGuard(parts, options, defaults);
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
      result = this.gate(req);
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
    if (this.onLimited === undefined) return;
    try {
      this.onLimited(req, decision);
    } catch (error) {
      this.report(error, req);
    }
  }

  private failed(error: unknown, req: Req): Lease | undefined {
    this.report(error, req);
    return this.failOpen ? undefined : this.storeDown;
  }

  private report(error: unknown, req: Req): void {
    try {
      this.onError(error instanceof Error ? error : new Error(String(error)), req);
    } catch {
      // A failing error hook has nowhere left to report to; the request must still be answered.
    }
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
  defaults: GuardDefaults<Req>,
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
  const onWarning = functionOption('onWarning', options.onWarning) ?? defaults.onWarning;
  const requestAccess: RequestAccess<Req> = {
    ip: access.ip,
    method: access.method,
    route: access.route,
    header: access.header,
    proxyTrust: access.proxyTrust,
    warn: (code, message) => onWarning({ code, message: `sluice: ${message}` }),
  };
  const gate = (req: Req): MaybePromise<Lease | undefined> => {
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
    { kind: 'concurrency', name: limiter.name, holdsLeases: true, gate, engine: { limiter } },
    options,
    defaults,
  );
}

/** The fleet usage load shedder for HTTP: a lease per request on the fleet's one budget. */
export function fleetGuard<Req>(
  where: string,
  options: HttpFleetShedOptions<Req>,
  defaults: GuardDefaults<Req>,
  adapterOptions: readonly string[] = [],
): HttpGuard<Req> {
  assertKnownOptions(where, options, [...FLEET_OPTIONS, ...adapterOptions]);
  const shedder = engineOf(options, 'shedder', FleetShedder, FLEET_ENGINE, () => {
    const inline = pick(options, FLEET_ENGINE) as Partial<FleetShedderOptions>;
    return new FleetShedder({ ...inline, budget: inline.budget as number, onError: defaults.onReleaseError });
  });
  const priority = priorityOption(options.priority, shedder.priorities);
  const gate =
    typeof priority === 'string'
      ? () => shedder.acquire(priority)
      : (req: Req) => shedder.acquire(priority(req));
  return HttpGuard.build(
    { kind: 'fleet', name: shedder.name, holdsLeases: true, gate, engine: { shedder } },
    options,
    defaults,
  );
}

/** The worker utilization load shedder for HTTP: a local verdict per request, no lease. */
export function utilizationGuard<Req>(
  where: string,
  options: HttpUtilizationShedOptions<Req>,
  defaults: GuardDefaults<Req>,
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
  const gate =
    typeof priority === 'string'
      ? () => verdict(shedder.check(priority))
      : (req: Req) => verdict(shedder.check(priority(req)));
  return HttpGuard.build(
    { kind: 'utilization', name: shedder.name, holdsLeases: false, gate, engine: { shedder } },
    options,
    defaults,
  );
}

/** The user's engine (`limiter` / `shedder`), or one built from the inline options, not both. */
function engineOf<E, O extends object>(
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
function pick(options: object, names: readonly string[]): Record<string, unknown> {
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

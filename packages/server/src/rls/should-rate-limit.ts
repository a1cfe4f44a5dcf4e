import type { Decision } from '@sluice/core';
import { MAX_KEY_BYTES } from '@sluice/host/state';
import type { RlsBackend, RlsCall } from './backends.js';
import { overrideRule, type RlsConfig, type Rule } from './config.js';
import { type Entry, type Match, matchDescriptor, overrideKeys } from './config-match.js';
import type { RlsStats } from './stats.js';
import { UNITS, UNKNOWN_UNIT, unitOfCode } from './units.js';
import { utf8Size } from './utf8-size.js';

/** ShouldRateLimit's request and reply as @grpc/proto-loader gives and takes them (keepCase, enums as numbers). */
export interface RateLimitRequest {
  domain: string;
  descriptors: {
    entries: Entry[];
    limit?: { requests_per_unit: number; unit: number } | null;
    hits_addend?: { value: number } | null;
  }[];
  hits_addend: number;
}

export const Code = { UNKNOWN: 0, OK: 1, OVER_LIMIT: 2 } as const;

export interface DescriptorStatus {
  code: number;
  current_limit?: { name: string; requests_per_unit: number; unit: number };
  limit_remaining: number;
  duration_until_reset?: { seconds: number; nanos: number };
}

export interface RateLimitResponse {
  overall_code: number;
  statuses: DescriptorStatus[];
  response_headers_to_add: { key: string; value: string }[];
}

/** A request the service refuses to decide (gRPC INVALID_ARGUMENT), with the reason. */
export class BadRequest extends Error {}

const MAX_UINT32 = 0xffff_ffff;

export interface DecideOptions {
  readonly maxDescriptors: number;
  readonly maxEntries: number;
  /** Report OK overall whatever the descriptors say (envoyproxy/ratelimit's SHADOW_MODE). */
  readonly shadowMode: boolean;
  /** The names of the IETF RateLimit headers to add, or undefined for none (the default there too). */
  readonly headers: { limit: string; remaining: string; reset: string } | undefined;
}

interface Planned {
  readonly match: Match | undefined;
  readonly hits: number;
  /** The index of its call among the backend calls, or -1 (no call: no rule, unlimited, replaced, limit 0). */
  call: number;
}

function clampUint32(n: number): number {
  return n <= 0 ? 0 : n >= MAX_UINT32 ? MAX_UINT32 : Math.floor(n);
}

function duration(ms: number): { seconds: number; nanos: number } {
  const whole = Math.max(0, Math.ceil(ms));
  return { seconds: Math.floor(whole / 1000), nanos: (whole % 1000) * 1_000_000 };
}

/**
 * envoyproxy/ratelimit's `duration_until_reset` for a fixed window: whole seconds to the end of
 * the unit-aligned window, counted from the whole second now is in.
 */
function windowReset(rule: Rule, now: number): { seconds: number; nanos: number } {
  const unitSeconds = rule.windowMs / 1000;
  if (!Number.isInteger(unitSeconds)) return duration(rule.windowMs - (now % rule.windowMs));
  const nowSeconds = Math.floor(now / 1000);
  return { seconds: unitSeconds - (nowSeconds % unitSeconds), nanos: 0 };
}

type CurrentLimit = NonNullable<DescriptorStatus['current_limit']>;

/** A rule's `current_limit`, built once per rule (read-only: every answer under the rule shares it). */
const currentLimits = new WeakMap<Rule, CurrentLimit>();

function currentLimit(rule: Rule): CurrentLimit {
  let limit = currentLimits.get(rule);
  if (limit === undefined) {
    limit = Object.freeze({
      name: rule.name,
      requests_per_unit: rule.requestsPerUnit,
      unit: rule.unit === undefined ? UNKNOWN_UNIT : UNITS[rule.unit].code,
    });
    currentLimits.set(rule, limit);
  }
  return limit;
}

function validate(request: RateLimitRequest, options: DecideOptions): void {
  if (typeof request.domain !== 'string' || request.domain === '') {
    throw new BadRequest('rate limit domain must not be empty');
  }
  const count = request.descriptors?.length ?? 0;
  if (count === 0) throw new BadRequest('rate limit descriptor list must not be empty');
  if (count > options.maxDescriptors) {
    throw new BadRequest(
      `a request may carry at most ${options.maxDescriptors} descriptors (maxDescriptors); got ${count}`,
    );
  }
  const domainBytes = utf8Size(request.domain);
  for (let i = 0; i < count; i++) {
    const d = request.descriptors[i]!;
    const entries = d.entries ?? [];
    if (entries.length > options.maxEntries) {
      throw new BadRequest(
        `descriptor ${i}: at most ${options.maxEntries} entries (maxEntries); got ${entries.length}`,
      );
    }
    let bytes = domainBytes;
    for (const e of entries) bytes += utf8Size(e.key) + utf8Size(e.value) + 2;
    if (bytes > MAX_KEY_BYTES) {
      throw new BadRequest(
        `descriptor ${i}: its domain and entries come to ${bytes} bytes, at most ${MAX_KEY_BYTES} (a counter's key)`,
      );
    }
    const hits = d.hits_addend?.value;
    if (hits !== undefined && (!Number.isSafeInteger(hits) || hits < 0)) {
      throw new BadRequest(`descriptor ${i}: hits_addend must be a whole number; got ${String(hits)}`);
    }
    if (d.limit != null && unitOfCode(d.limit.unit) === undefined) {
      throw new BadRequest(`descriptor ${i}: limit override has no known unit (${d.limit.unit})`);
    }
  }
}

/**
 * One ShouldRateLimit, as envoyproxy/ratelimit answers it: each descriptor matched to its most
 * specific rule (or its own limit override), rules named by another matched rule's `replaces`
 * dropped, unlimited ones answered without counting, the rest decided by the backend (each on
 * its own, or all-or-nothing when the domain asks), OVER_LIMIT overall if any descriptor is.
 */
export async function shouldRateLimit(
  request: RateLimitRequest,
  config: RlsConfig,
  backend: RlsBackend,
  stats: RlsStats,
  options: DecideOptions,
): Promise<RateLimitResponse> {
  validate(request, options);
  const domain = config.domains.get(request.domain);
  const requestHits = Math.max(1, request.hits_addend ?? 0);
  // Rules named by another's `replaces` (rare: the set is made only when one names any).
  let replacing: Set<string> | undefined;
  const planned: Planned[] = request.descriptors.map((d) => {
    const hits = d.hits_addend == null ? requestHits : d.hits_addend.value;
    let match: Match | undefined;
    if (d.limit != null) {
      const keys = overrideKeys(request.domain, d.entries);
      match = {
        rule: overrideRule(keys.statsKey, d.limit.requests_per_unit, unitOfCode(d.limit.unit)!),
        ...keys,
      };
    } else if (domain !== undefined) {
      match = matchDescriptor(domain, d.entries);
    }
    const replaces = match?.rule.replaces;
    if (replaces !== undefined && replaces.length > 0) {
      replacing ??= new Set();
      for (const name of replaces) replacing.add(name);
    }
    return { match, hits, call: -1 };
  });
  const calls: RlsCall[] = [];
  for (const p of planned) {
    const rule = p.match?.rule;
    if (rule === undefined || rule.algorithm === undefined) continue;
    if (rule.name !== '' && replacing?.has(rule.name) === true) continue;
    p.call = calls.length;
    const key = p.match!.counterKey;
    const policy = rule.name === '' ? rule.fullKey : rule.name;
    calls.push({
      call: rule.shadow
        ? { algorithm: rule.algorithm, key, cost: p.hits, policy, shadow: true }
        : { algorithm: rule.algorithm, key, cost: p.hits, policy },
      peek: p.hits === 0,
      countsRefused: rule.countsRefused,
    });
  }
  const answer =
    calls.length === 0
      ? { decisions: [] as Decision[], now: 0 }
      : await backend.decide(calls, domain?.allOrNothing === true);

  let overall: number = Code.OK;
  let minimum: DescriptorStatus | undefined;
  const statuses = planned.map((p): DescriptorStatus => {
    const rule = p.match?.rule;
    if (rule === undefined || (rule.name !== '' && replacing?.has(rule.name) === true && !rule.unlimited)) {
      return { code: Code.OK, limit_remaining: 0 };
    }
    if (rule.unlimited) {
      stats.hit(p.match!.statsKey, p.hits);
      return { code: Code.OK, limit_remaining: MAX_UINT32 };
    }
    let over: boolean;
    let remaining: number;
    let reset: { seconds: number; nanos: number };
    let before: number;
    let limit = rule.requestsPerUnit;
    const now = answer.now || Date.now();
    if (p.call < 0) {
      // requests_per_unit 0: every request is over, nothing is counted.
      over = true;
      remaining = 0;
      before = 0;
      reset = windowReset(rule, now);
    } else {
      const d = answer.decisions[p.call]!;
      over = !d.allowed;
      remaining = over ? 0 : clampUint32(d.remaining);
      limit = d.limit;
      before = over ? limit - d.remaining : limit - d.remaining - p.hits;
      reset = rule.countsRefused
        ? windowReset(rule, now)
        : duration(over ? d.retryAfter || d.resetAfter : d.resetAfter);
    }
    stats.record(p.match!.statsKey, {
      limit,
      before: Math.max(0, before),
      hits: p.hits,
      over,
      shadow: rule.shadow,
    });
    const status: DescriptorStatus = {
      code: over && !rule.shadow ? Code.OVER_LIMIT : Code.OK,
      current_limit: currentLimit(rule),
      limit_remaining: remaining,
      duration_until_reset: reset,
    };
    if (
      options.headers !== undefined &&
      (minimum === undefined || status.limit_remaining < minimum.limit_remaining)
    ) {
      minimum = status;
    }
    if (status.code === Code.OVER_LIMIT) {
      overall = Code.OVER_LIMIT;
      minimum = status;
    }
    return status;
  });
  const headers: { key: string; value: string }[] = [];
  if (options.headers !== undefined && minimum !== undefined) {
    headers.push(
      { key: options.headers.limit, value: String(minimum.current_limit!.requests_per_unit) },
      { key: options.headers.remaining, value: String(minimum.limit_remaining) },
      { key: options.headers.reset, value: String(resetSeconds(minimum)) },
    );
  }
  if (options.shadowMode) overall = Code.OK;
  return { overall_code: overall, statuses, response_headers_to_add: headers };
}

/** The reset header's whole seconds (rounded up: a client waiting that long finds the window new). */
function resetSeconds(status: DescriptorStatus): number {
  const d = status.duration_until_reset;
  if (d === undefined) return 0;
  return d.seconds + (d.nanos > 0 ? 1 : 0);
}

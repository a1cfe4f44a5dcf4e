import {
  type Algorithm,
  fixedWindow,
  gcra,
  SluiceError,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import { parseDuration } from '@sluice/core/adapter';
import { configError, type RawDescriptor, type RawRateLimit, type RawRoot } from './config-file.js';
import { isUnitName, UNITS, type UnitName, unitOfLength } from './units.js';

/**
 * The rate limit service's configuration, compiled from the YAML files: one tree per domain,
 * matched as envoyproxy/ratelimit matches (config-match.ts). A compiled config never changes; a
 * reload builds a new one and swaps it in whole, so a request sees one config from start to end.
 */

/** What a matched descriptor is held to. */
export interface Rule {
  /** The config path, `domain.key_value.key`: the stats key before detailed_metric / value_to_metric. */
  readonly fullKey: string;
  /** `rate_limit.name`: what `replaces` refers to. '' when none. */
  readonly name: string;
  readonly replaces: readonly string[];
  readonly unlimited: boolean;
  readonly shadow: boolean;
  readonly detailedMetric: boolean;
  /** `requests_per_unit`, reported as `current_limit.requests_per_unit`. */
  readonly requestsPerUnit: number;
  /** The unit reported on the wire; undefined for a sluice duration that is not one whole unit. */
  readonly unit: UnitName | undefined;
  /** The window or period, ms. */
  readonly windowMs: number;
  /**
   * The algorithm that decides; undefined when nothing is counted (unlimited, or requests_per_unit
   * 0, which refuses every request as envoyproxy/ratelimit does).
   */
  readonly algorithm: Algorithm | undefined;
  /**
   * envoyproxy/ratelimit's fixed window: a refused request still counts (its INCRBY happens
   * whatever the verdict), so the window stays full until it ends. False for `algorithm:`.
   */
  readonly countsRefused: boolean;
  readonly file: string;
  readonly line: number;
}

export interface ConfigNode {
  /** Children by `key_value` or `key`, as envoyproxy/ratelimit keys them. */
  readonly children: ReadonlyMap<string, ConfigNode>;
  /** This level's wildcard children: the child's map key and that key split on `*`. */
  readonly wildcards: readonly { readonly key: string; readonly parts: readonly string[] }[];
  readonly rule: Rule | undefined;
  readonly valueToMetric: boolean;
  readonly shareThreshold: boolean;
}

export interface DomainConfig extends ConfigNode {
  readonly domain: string;
  readonly allOrNothing: boolean;
  readonly file: string;
}

export interface RlsConfig {
  readonly domains: ReadonlyMap<string, DomainConfig>;
  /** The files it was built from. */
  readonly files: readonly string[];
}

/** `algorithm:` names (snake_case as YAML keys are, or core's kebab-case) → how a rule builds it. */
const ALGORITHMS: Record<string, (limit: number, windowMs: number, burst: number | undefined) => Algorithm> =
  {
    fixed_window: (limit, window) => fixedWindow({ limit, window }),
    sliding_window_counter: (limit, window) => slidingWindowCounter({ limit, window }),
    sliding_window_log: (limit, window) => slidingWindowLog({ limit, window }),
    token_bucket: (limit, window, burst) =>
      tokenBucket({ capacity: burst ?? limit, refillAmount: limit, refillInterval: window }),
    gcra: (limit, window, burst) =>
      gcra(burst === undefined ? { rate: limit, period: window } : { rate: limit, period: window, burst }),
  };

/** Kinds a rate limit service cannot serve, by name and why. */
const REFUSED: Record<string, string> = {
  leaky_bucket_queue:
    'leaky_bucket_queue admits with a delay, and a rate limit service answers at once (Envoy cannot hold the request)',
};

function algorithmName(text: string): string {
  return text.replaceAll('-', '_').toLowerCase();
}

function compileRule(root: RawRoot, fullKey: string, d: RawDescriptor, rl: RawRateLimit): Rule {
  const fail = (message: string): never => {
    throw configError(root.file, rl.line, message);
  };
  const unitText = rl.unit?.toLowerCase();
  const validUnit = unitText !== undefined && isUnitName(unitText);
  for (const r of rl.replaces) {
    if (r === '') fail('should not have an empty replaces entry');
    if (r === rl.name) fail('replaces should not contain name of same descriptor');
  }
  const base = {
    fullKey,
    name: rl.name,
    replaces: rl.replaces,
    shadow: d.shadowMode,
    detailedMetric: d.detailedMetric,
    requestsPerUnit: rl.requestsPerUnit,
    file: root.file,
    line: rl.line,
  };
  if (rl.unlimited) {
    if (validUnit) fail('should not specify rate limit unit when unlimited');
    return {
      ...base,
      unlimited: true,
      unit: undefined,
      windowMs: 0,
      algorithm: undefined,
      countsRefused: false,
    };
  }
  let windowMs: number;
  let unit: UnitName | undefined;
  if (rl.duration !== undefined) {
    if (rl.unit !== undefined) fail('give unit or duration, not both');
    try {
      windowMs = parseDuration('duration', rl.duration);
    } catch (err) {
      return fail(`invalid duration '${rl.duration}': ${(err as Error).message}`);
    }
    unit = unitOfLength(windowMs);
  } else {
    if (!validUnit) fail(`invalid rate limit unit '${rl.unit ?? ''}'`);
    unit = unitText as UnitName;
    windowMs = UNITS[unit].seconds * 1000;
  }
  if (rl.algorithm === undefined) {
    if (rl.burst !== undefined) fail('burst needs an algorithm that has one (token_bucket, gcra)');
    const algorithm =
      rl.requestsPerUnit === 0 ? undefined : fixedWindow({ limit: rl.requestsPerUnit, window: windowMs });
    return { ...base, unlimited: false, unit, windowMs, algorithm, countsRefused: true };
  }
  const name = algorithmName(rl.algorithm);
  const refused = REFUSED[name];
  if (refused !== undefined) fail(`algorithm ${name}: ${refused}`);
  const build = ALGORITHMS[name];
  if (build === undefined) {
    fail(`unknown algorithm '${rl.algorithm}'; known: ${Object.keys(ALGORITHMS).join(', ')}`);
  }
  if (rl.requestsPerUnit === 0) fail(`requests_per_unit must be at least 1 with algorithm ${name}`);
  if (rl.burst !== undefined && name !== 'token_bucket' && name !== 'gcra') {
    fail(`burst applies to token_bucket and gcra, not ${name}`);
  }
  let algorithm: Algorithm;
  try {
    algorithm = build!(rl.requestsPerUnit, windowMs, rl.burst);
  } catch (err) {
    return fail(err instanceof SluiceError ? err.message : String(err));
  }
  return { ...base, unlimited: false, unit, windowMs, algorithm, countsRefused: false };
}

interface MutableNode {
  children: Map<string, MutableNode>;
  wildcards: { key: string; parts: string[] }[];
  rule: Rule | undefined;
  valueToMetric: boolean;
  shareThreshold: boolean;
}

function emptyNode(): MutableNode {
  return { children: new Map(), wildcards: [], rule: undefined, valueToMetric: false, shareThreshold: false };
}

function load(
  root: RawRoot,
  into: MutableNode,
  parentKey: string,
  descriptors: readonly RawDescriptor[],
): void {
  for (const d of descriptors) {
    if (d.key === '') throw configError(root.file, d.line, 'descriptor has empty key');
    const finalKey = d.value === '' ? d.key : `${d.key}_${d.value}`;
    const fullKey = parentKey + finalKey;
    if (into.children.has(finalKey)) {
      throw configError(root.file, d.line, `duplicate descriptor composite key '${fullKey}'`);
    }
    if (d.shareThreshold && !finalKey.includes('*')) {
      throw configError(
        root.file,
        d.line,
        `share_threshold can only be used with wildcard values (containing '*'), but found key '${finalKey}'`,
      );
    }
    if (finalKey.includes('*')) into.wildcards.push({ key: finalKey, parts: finalKey.split('*') });
    const node = emptyNode();
    node.rule = d.rateLimit === undefined ? undefined : compileRule(root, fullKey, d, d.rateLimit);
    node.valueToMetric = d.valueToMetric;
    node.shareThreshold = d.shareThreshold;
    load(root, node, `${fullKey}.`, d.descriptors);
    into.children.set(finalKey, node);
  }
}

/**
 * Builds a config from files already read. Throws a SluiceError naming the file and line of the
 * first error (an empty domain, a domain in two files, a duplicate descriptor, a bad unit…).
 */
export function buildConfig(roots: readonly RawRoot[]): RlsConfig {
  const domains = new Map<string, DomainConfig>();
  for (const root of roots) {
    if (root.domain === '') throw configError(root.file, undefined, 'config file cannot have empty domain');
    const existing = domains.get(root.domain);
    if (existing !== undefined) {
      throw configError(
        root.file,
        undefined,
        `duplicate domain '${root.domain}' in config file (also in ${existing.file})`,
      );
    }
    const node = emptyNode();
    load(root, node, `${root.domain}.`, root.descriptors);
    domains.set(root.domain, {
      ...node,
      domain: root.domain,
      allOrNothing: root.allOrNothing,
      file: root.file,
    });
  }
  return { domains, files: roots.map((r) => r.file) };
}

/** A rule for a descriptor that brings its own limit (`RateLimitOverride`): never shadow, never replaced. */
export function overrideRule(fullKey: string, requestsPerUnit: number, unit: UnitName): Rule {
  const windowMs = UNITS[unit].seconds * 1000;
  return {
    fullKey,
    name: '',
    replaces: [],
    unlimited: false,
    shadow: false,
    detailedMetric: false,
    requestsPerUnit,
    unit,
    windowMs,
    algorithm: requestsPerUnit === 0 ? undefined : fixedWindow({ limit: requestsPerUnit, window: windowMs }),
    countsRefused: true,
    file: '(request)',
    line: 0,
  };
}

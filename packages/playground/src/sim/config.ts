import {
  type Algorithm,
  ErrorCode,
  type HeaderFormat,
  Limiter,
  type ResolvedLimit,
  SluiceError,
} from '@sluice/core';
import { ALGORITHM_FACTORIES, HEADER_FORMATS } from '@sluice/core/adapter';
import type { TrafficSpec } from './traffic.js';

/**
 * The factories of @sluice/core by the name users write them with (core's `ALGORITHM_FACTORIES`,
 * one per kind); a limit's options go to its factory untouched, so every option is validated by
 * core itself.
 */
export const FACTORIES = ALGORITHM_FACTORIES;
export type FactoryName = keyof typeof FACTORIES;
export const FACTORY_NAMES = Object.keys(FACTORIES) as FactoryName[];

/** One limit: `{ "algorithm": "tokenBucket", "capacity": 10, "refillInterval": "1s" }` (flat, as in the URL). */
export type LimitSpec = { readonly algorithm: FactoryName; readonly name?: string } & Readonly<
  Record<string, string | number | boolean>
>;

/**
 * `'side-by-side'`: each limit on its own, as if each were the only one (compare algorithms).
 * `'layered'`: all limits on one limiter, all-or-nothing, as `new Limiter({ limits })` checks them.
 */
export type Mode = 'side-by-side' | 'layered';
export const MODES = ['side-by-side', 'layered'] as const satisfies readonly Mode[];

/** What a playground run is: the limits, how they combine, the traffic, and the header format shown. */
export interface PlaygroundConfig {
  readonly mode: Mode;
  readonly limits: readonly LimitSpec[];
  readonly traffic: readonly TrafficSpec[];
  /** @default 'ietf' */
  readonly headers: HeaderFormat;
}

export const MAX_LIMITS = 4;

/** One limiter of a run: its limits, already made by core (a layered run has one lane, side by side one per limit). */
export interface Lane {
  /** The limit's name, or the names joined with ` + ` for a layered lane. */
  readonly name: string;
  readonly limits: readonly ResolvedLimit[];
}

/** Makes the lanes of a configuration: every algorithm through its core factory, the names through `Limiter`. */
export function lanesOf(config: PlaygroundConfig): Lane[] {
  const { limits } = config;
  if (!Array.isArray(limits) || limits.length < 1 || limits.length > MAX_LIMITS) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `limits must hold 1 to ${MAX_LIMITS} limits; got ${Array.isArray(limits) ? limits.length : typeof limits}`,
      {
        option: 'limits',
        value: limits,
      },
    );
  }
  if (!(MODES as readonly string[]).includes(config.mode)) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `mode must be one of ${MODES.join(', ')}; got ${JSON.stringify(config.mode)}`,
      {
        option: 'mode',
        value: config.mode,
      },
    );
  }
  const definitions = limits.map((spec, i) => ({ name: nameOf(limits, i), algorithm: algorithmOf(spec, i) }));
  if (config.mode === 'layered') {
    const resolved = new Limiter({ limits: definitions }).limits;
    return [{ name: resolved.map((l) => l.name).join(' + '), limits: resolved }];
  }
  return definitions.map((definition) => {
    const resolved = new Limiter({ limits: [definition] }).limits;
    return { name: resolved[0]!.name, limits: resolved };
  });
}

/** The limit's name, else its factory's, numbered when two limits would share it. */
export function nameOf(limits: readonly LimitSpec[], i: number): string {
  const spec = limits[i]!;
  if (spec.name !== undefined && spec.name !== '') return spec.name;
  const same = limits.filter((l) => (l.name ?? '') === '' && l.algorithm === spec.algorithm);
  if (same.length === 1) return spec.algorithm;
  return `${spec.algorithm}-${same.indexOf(spec) + 1}`;
}

function algorithmOf(spec: LimitSpec, i: number): Algorithm {
  const factory = (FACTORIES as Record<string, ((options: object) => Algorithm) | undefined>)[spec.algorithm];
  if (
    typeof spec.algorithm !== 'string' ||
    factory === undefined ||
    !Object.hasOwn(FACTORIES, spec.algorithm)
  ) {
    throw new SluiceError(
      ErrorCode.UNKNOWN_ALGORITHM,
      `limits[${i}].algorithm must be one of ${FACTORY_NAMES.join(', ')}; got ${JSON.stringify(spec.algorithm)}`,
      { option: `limits[${i}].algorithm`, value: spec.algorithm },
    );
  }
  const { algorithm: _, name: __, ...options } = spec;
  return factory(options);
}

/** Reads `headers`, the format of the headers shown at a clicked point. */
export function headerFormatOf(value: unknown): HeaderFormat {
  if (value === undefined) return 'ietf';
  if (!(HEADER_FORMATS as readonly unknown[]).includes(value)) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `headers must be one of ${HEADER_FORMATS.join(', ')}; got ${JSON.stringify(value)}`,
      {
        option: 'headers',
        value,
      },
    );
  }
  return value as HeaderFormat;
}

/**
 * A configuration as read from JSON (a `--config` file): `mode` and `headers` may be left out.
 * The limits and traffic are checked when they are used (`lanesOf`, `makeTrace`).
 */
export function configFromJson(value: unknown): PlaygroundConfig {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      'the configuration must be a JSON object with limits (and traffic)',
      {
        option: 'config',
        value,
      },
    );
  }
  const raw = value as Record<string, unknown>;
  const known = ['mode', 'limits', 'traffic', 'headers'];
  for (const name of Object.keys(raw)) {
    if (!known.includes(name)) {
      throw new SluiceError(
        ErrorCode.UNKNOWN_OPTION,
        `the configuration has no field ${JSON.stringify(name)} (it has ${known.join(', ')})`,
        {
          option: name,
        },
      );
    }
  }
  return {
    mode: (raw.mode ?? 'side-by-side') as Mode,
    limits: (raw.limits ?? []) as LimitSpec[],
    traffic: (raw.traffic ?? []) as TrafficSpec[],
    headers: headerFormatOf(raw.headers),
  };
}

/**
 * envoyproxy/ratelimit's units, by the numbers of `RateLimitResponse.RateLimit.Unit` on the wire,
 * and their lengths as it counts them: a month is 30 days and a year 365, windows aligned to
 * multiples of the unit since the Unix epoch.
 */
export const UNITS = {
  second: { code: 1, seconds: 1 },
  minute: { code: 2, seconds: 60 },
  hour: { code: 3, seconds: 3600 },
  day: { code: 4, seconds: 86_400 },
  month: { code: 5, seconds: 2_592_000 },
  year: { code: 6, seconds: 31_536_000 },
  week: { code: 7, seconds: 604_800 },
} as const;

export type UnitName = keyof typeof UNITS;

/** The wire code of "no unit" (a sluice duration that is not one whole unit). */
export const UNKNOWN_UNIT = 0;

export function isUnitName(value: string): value is UnitName {
  return Object.hasOwn(UNITS, value);
}

/** The unit whose wire code is `code`, or undefined (UNKNOWN, or a number no Envoy sends). */
export function unitOfCode(code: number): UnitName | undefined {
  for (const [name, unit] of Object.entries(UNITS)) if (unit.code === code) return name as UnitName;
  return undefined;
}

/** The unit exactly `ms` long, or undefined: what a sluice duration reports as `current_limit.unit`. */
export function unitOfLength(ms: number): UnitName | undefined {
  for (const [name, unit] of Object.entries(UNITS)) if (unit.seconds * 1000 === ms) return name as UnitName;
  return undefined;
}

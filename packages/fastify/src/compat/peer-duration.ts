/**
 * @fastify/rate-limit reads `timeWindow` strings and writes the "retry in …" of its refusal with
 * @lukeed/ms; these read and write the same strings, so a migrated app's windows and messages stay
 * the same. (sluice's own durations, `'15m'`, take no spaces or long unit names.)
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const YEAR = 365.25 * DAY;

/** The units @lukeed/ms reads, each with its spellings: `'1 minute'`, `'2mins'`, `'3m'`. */
const UNITS: readonly [pattern: RegExp, ms: number][] = [
  [/^(?:ms|msecs?|milliseconds?)$/, 1],
  [/^(?:s|secs?|seconds?)$/, SECOND],
  [/^(?:m|mins?|minutes?)$/, MINUTE],
  [/^(?:h|hrs?|hours?)$/, HOUR],
  [/^(?:d|days?)$/, DAY],
  [/^(?:w|wks?|weeks?)$/, 7 * DAY],
  [/^(?:y|yrs?|years?)$/, YEAR],
];

/**
 * A window string in ms, as @fastify/rate-limit reads it (`'1 minute'`, `'2s'`, `'500'`), or
 * `undefined` when it cannot be read (there a request then fails; the compat layer refuses it at
 * creation instead).
 */
export function parsePeerDuration(text: string): number | undefined {
  const match = /^(-?\d*\.?\d+) *([a-z]*)$/.exec(text.toLowerCase());
  if (match === null) return undefined;
  const amount = Number.parseFloat(match[1]!);
  if (amount === 0 || Number.isNaN(amount)) return undefined;
  const unit = match[2]!;
  if (unit === '') return amount;
  const found = UNITS.find(([pattern]) => pattern.test(unit));
  return found === undefined ? undefined : amount * found[1];
}

/** `'1 second'`, `'7 seconds'`, `'1 minute'`, `'500 ms'`: the "retry in …" of a refusal. */
export function formatPeerDuration(ms: number): string {
  if (ms < SECOND) return `${ms} ms`;
  const [unit, size] =
    ms < MINUTE
      ? ['second', SECOND]
      : ms < HOUR
        ? ['minute', MINUTE]
        : ms < DAY
          ? ['hour', HOUR]
          : ms < YEAR
            ? ['day', DAY]
            : ['year', YEAR];
  const value = ms / size;
  const shown = Number.isInteger(value) ? value : Math.round(value);
  return `${shown} ${unit}${shown === 1 ? '' : 's'}`;
}

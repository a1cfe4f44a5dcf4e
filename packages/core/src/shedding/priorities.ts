import { describeValue, ErrorCode, SluiceError } from '../errors.js';

/** The default priority levels, most important first. */
export const DEFAULT_PRIORITIES: readonly string[] = Object.freeze(['critical', 'normal', 'low']);

/**
 * Priority names, most important first: non-empty, distinct strings, at least `min` of them.
 * Returns a frozen copy.
 */
export function prioritiesOption(value: unknown, min: number): readonly string[] {
  if (!Array.isArray(value) || value.length < min) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `priorities must be an array of at least ${min} names, most important first; got ${describeValue(value)}`,
      { option: 'priorities', value },
    );
  }
  const seen = new Set<string>();
  for (const [i, name] of value.entries()) {
    if (typeof name !== 'string' || name === '' || seen.has(name)) {
      throw new SluiceError(
        ErrorCode.INVALID_OPTION,
        `priorities[${i}] must be a non-empty name used once; got ${describeValue(name)}`,
        { option: `priorities[${i}]`, value: name },
      );
    }
    seen.add(name);
  }
  return Object.freeze([...(value as string[])]);
}

/** Name → position (0 = most important), for an O(1) lookup per request. */
export function priorityIndex(priorities: readonly string[]): ReadonlyMap<string, number> {
  return new Map(priorities.map((name, i) => [name, i]));
}

/**
 * The position of a request's priority. An unknown name is a bug in the caller's classifier, so
 * it throws rather than guess a level.
 */
export function lookupPriority(
  index: ReadonlyMap<string, number>,
  priorities: readonly string[],
  priority: unknown,
): number {
  const at = index.get(priority as string);
  if (at === undefined) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `priority must be one of ${priorities.map((p) => `'${p}'`).join(', ')}; got ${describeValue(priority)}`,
      { option: 'priority', value: priority },
    );
  }
  return at;
}

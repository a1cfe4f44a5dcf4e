import { describeValue, ErrorCode, SluiceError } from '../errors.js';
import { prioritiesOption } from '../shedding/priorities.js';
import { EPSILON } from '../slack.js';

/** Priority names with their guaranteed shares of the limit, in the order given. */
export interface PartitionPlan {
  readonly names: readonly string[];
  readonly shares: readonly number[];
}

/** No partitions: one unnamed partition holding the whole limit. */
export const SINGLE: PartitionPlan = Object.freeze({
  names: Object.freeze(['']),
  shares: Object.freeze([1]),
});

/** `{ critical: 0.8, low: 0.2 }`: names as priorities are named, shares above 0 summing to at most 1. */
export function partitionsOption(value: unknown): PartitionPlan {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `partitions must be an object of priority → share of the limit; got ${describeValue(value)}`,
      { option: 'partitions', value },
    );
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      'partitions must name at least one priority; leave the option out for one partition holding the whole limit',
      { option: 'partitions', value },
    );
  }
  const names = prioritiesOption(
    entries.map(([name]) => name),
    1,
  );
  let sum = 0;
  const shares = entries.map(([name, share]) => {
    if (typeof share !== 'number' || !Number.isFinite(share) || share <= 0 || share > 1) {
      throw new SluiceError(
        ErrorCode.INVALID_OPTION,
        `partitions.${name} must be a share of the limit above 0 and at most 1; got ${describeValue(share)}`,
        { option: `partitions.${name}`, value: share },
      );
    }
    sum += share;
    return share;
  });
  if (sum > 1 + EPSILON) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `partitions' shares must add up to at most 1; they add up to ${sum}`,
      { option: 'partitions', value },
    );
  }
  return Object.freeze({ names, shares: Object.freeze(shares) });
}

/**
 * Each partition's guaranteed slots at this limit: `⌊limit × share⌋`, and the slots the floors
 * leave over (up to `⌊limit × Σ shares⌋`) go one each to the largest remainders, earlier
 * partitions first on ties (Hamilton's apportionment). So the guarantees never add up to more
 * than the limit, and a share of at least 1/limit always guarantees a slot.
 */
export function guaranteedSlots(limit: number, shares: readonly number[]): number[] {
  let total = 0;
  const slots = shares.map((share) => {
    total += share;
    return Math.floor(limit * share + EPSILON);
  });
  let left = Math.floor(limit * total + EPSILON) - slots.reduce((a, b) => a + b, 0);
  const order = shares
    .map((share, i) => ({ i, rest: limit * share - slots[i]! }))
    .sort((a, b) => b.rest - a.rest || a.i - b.i);
  for (const { i } of order) {
    if (left <= 0) break;
    slots[i]! += 1;
    left -= 1;
  }
  return slots;
}

/**
 * Whether one more request of partition `p` may start. Never more than `limit` in flight in all:
 * when the limit has shrunk below what is in flight, everything waits until enough have ended.
 *
 * - Below its guarantee, a partition is admitted whenever the limit has room.
 * - At or above it, it borrows: admitted only if what stays free afterwards still covers what
 *   every other partition keeps for itself: `min(guaranteed, wanted) − inFlight` of it, `wanted`
 *   being how many slots it wants at once (`wanted(q)`: 0 when it has no demand). So an idle
 *   partition's share is lent out, a busy one keeps free only the part of its share it has
 *   recently used (and ⌈√ of that⌉ more, at least 1: `headroom`), and once it asks for more,
 *   every slot that ends goes to it (or to another partition below what it keeps) until it has
 *   what it asks for, up to its share.
 */
export function admits(
  p: number,
  limit: number,
  inFlight: number,
  counts: readonly number[],
  guaranteed: readonly number[],
  wanted: (q: number) => number,
): boolean {
  if (inFlight >= limit) return false;
  if (counts[p]! < guaranteed[p]!) return true;
  let reserved = 0;
  for (let q = 0; q < counts.length; q++) {
    if (q === p || counts[q]! >= guaranteed[q]!) continue;
    reserved += Math.max(0, Math.min(guaranteed[q]!, wanted(q)) - counts[q]!);
  }
  return inFlight + 1 + reserved <= limit;
}

/**
 * How many slots a partition has recently wanted at once: the most it had in flight counting the
 * request it asked for (`inFlight + 1` at each ask, admitted or not), over the last one to two
 * `window`s. Two buckets on a grid of `window`, rolled lazily at the partition's own asks: pure, no
 * timers.
 *
 * The partitions reserve a partition's unused guarantee only up to this (plus `headroom` of it),
 * not all of it: a critical partition guaranteed 16 slots that needs 10 would otherwise keep 6
 * slots empty whenever it has demand, and the borrowers would be refused work the limit (and the
 * service behind it) still had room for.
 */
export interface DemandState {
  /** ms the current bucket opened. */
  readonly since: number;
  /** Most wanted at once in the current bucket. */
  readonly peak: number;
  /** Most wanted at once in the bucket before it (0 when that bucket is not the one just before). */
  readonly previous: number;
}

export const NO_DEMAND: DemandState = Object.freeze({
  since: Number.NEGATIVE_INFINITY,
  peak: 0,
  previous: 0,
});

/** The state after an ask at `now` that would bring the partition to `wanted` in flight. */
export function recordAsk(state: DemandState, now: number, wanted: number, window: number): DemandState {
  let { since, peak, previous } = state;
  if (now - since >= window || now < since) {
    // Buckets open on a grid of `window`, so that an ask is remembered for one to two windows and
    // never longer. A bucket opened at the ask that rolled it kept a peak up to three windows old
    // (the bucket before could have opened two windows before it): the property test found a
    // borrower refused for a peak older than two windows.
    const start = now - (((now % window) + window) % window);
    previous = Math.abs(start - since - window) < window / 2 ? peak : 0;
    since = start;
    peak = 0;
  }
  return { since, peak: Math.max(peak, wanted), previous };
}

/** The most wanted at once over the last one to two windows at `now` (0: no ask that recent). */
export function recentPeak(state: DemandState, now: number, window: number): number {
  const age = now - state.since;
  if (age < 0) return state.peak;
  if (age < window) return Math.max(state.peak, state.previous);
  return age < 2 * window ? state.peak : 0;
}

/**
 * The slots kept free above a partition's recent peak: `⌈√peak⌉`, at least 1. A partition's in
 * flight is a count of independent arrivals, which swings by about √ of its mean from one moment
 * to the next, so a burst past the peak is of that size, not one request; Envoy's gradient leaves
 * √limit of headroom for the same reason. One slot (until 2026-11-28) let borrowers fill the rest:
 * with the app's event loop turning in bursts (the bench's Express app at 4×, ~20 ms stalls in the
 * simulator) critical was refused 1% of the time (47 of 4,571 with Vegas), 42 of them for slots
 * low priority had borrowed; with √ of the peak, 5.
 */
export function headroom(peak: number): number {
  return Math.max(1, Math.ceil(Math.sqrt(peak)));
}

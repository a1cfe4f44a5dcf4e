import type { LaneRun } from './simulate.js';
import type { Trace } from './trace.js';

/** One lane's decisions summed per time bucket. */
export interface LaneBuckets {
  /** Requests admitted in each bucket. */
  readonly admitted: Float64Array;
  /** Requests refused in each bucket. */
  readonly refused: Float64Array;
  /** The lowest `remaining` reported in each bucket (the tightest client); null where no request came. */
  readonly remaining: (number | null)[];
  /** The longest `delay` told in each bucket, ms. */
  readonly delay: Float64Array;
}

/**
 * A run aggregated to a few hundred buckets for plotting: a chart of a million points draws no
 * better than one of a thousand, and much slower.
 */
export interface Buckets {
  /** Width of a bucket, ms: 1, 2 or 5 × a power of ten. */
  readonly width: number;
  /** Start of the first bucket, ms (a multiple of the width, so epoch-aligned windows line up). */
  readonly origin: number;
  /** Start of each bucket, seconds from `origin`. */
  readonly x: Float64Array;
  /** Requests offered in each bucket. */
  readonly offered: Float64Array;
  readonly lanes: readonly LaneBuckets[];
}

/** The smallest 1, 2 or 5 × 10^k ms that is at least `ms`. */
export function niceWidth(ms: number): number {
  if (!(ms > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(ms));
  for (const step of [1, 2, 5, 10]) if (step * power >= ms * (1 - 1e-12)) return step * power;
  return 10 * power;
}

export function bucketize(trace: Trace, runs: readonly LaneRun[], target = 600): Buckets {
  const { times } = trace;
  const first = trace.length > 0 ? times[0]! : 0;
  const last = trace.length > 0 ? times[trace.length - 1]! : 0;
  // A trace that starts near 0 is drawn from 0 (its times read as they were written); one that
  // starts later (epoch times) from its first bucket.
  const fromZero = first >= 0 && first <= last - first;
  const width = niceWidth((last - (fromZero ? 0 : first)) / target);
  const origin = fromZero ? 0 : Math.floor(first / width) * width;
  const count = Math.max(1, Math.floor((last - origin) / width) + 1);
  const x = new Float64Array(count);
  for (let b = 0; b < count; b++) x[b] = (b * width) / 1000;
  const offered = new Float64Array(count);
  const bucketOf = new Uint32Array(trace.length);
  for (let i = 0; i < trace.length; i++) {
    const b = Math.min(count - 1, Math.floor((times[i]! - origin) / width));
    bucketOf[i] = b;
    offered[b]!++;
  }
  const lanes = runs.map((run) => {
    const admitted = new Float64Array(count);
    const refused = new Float64Array(count);
    const lowest = new Float64Array(count).fill(Number.POSITIVE_INFINITY);
    const delay = new Float64Array(count);
    for (let i = 0; i < trace.length; i++) {
      const b = bucketOf[i]!;
      if (run.allowed[i]) {
        admitted[b]!++;
        if (run.delay[i]! > delay[b]!) delay[b] = run.delay[i]!;
      } else {
        refused[b]!++;
      }
      if (run.remaining[i]! < lowest[b]!) lowest[b] = run.remaining[i]!;
    }
    const remaining = Array.from(lowest, (v) => (v === Number.POSITIVE_INFINITY ? null : v));
    return { admitted, refused, remaining, delay };
  });
  return { width, origin, x, offered, lanes };
}

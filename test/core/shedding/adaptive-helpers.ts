import type { LimitController, RttSample } from '@sluice/core';
import type { WindowSummary } from '../../../packages/core/src/adaptive/sample-window.js';

/** A closed window as a controller sees it: its RTT (ms), the most in flight, whether it held a drop. */
export function win(rtt: number | undefined, maxInFlight: number, dropped = false): WindowSummary {
  return { rtt, minRtt: rtt, maxInFlight, dropped, samples: 10 };
}

/** A deterministic stand-in for Math.random: cycles through the given draws. */
export function draws(...values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length]!;
}

/**
 * A controller that records every sample it is told and keeps the limit at `limit`; its no-load
 * RTT is `rttNoLoad(state)` (none by default), its state the number of samples.
 */
export function recording(
  limit: number,
  rttNoLoad: (state: number) => number | undefined = () => undefined,
): LimitController<number> & { samples: RttSample[] } {
  const samples: RttSample[] = [];
  return {
    kind: 'aimd',
    minLimit: 1,
    maxLimit: limit,
    samples,
    start: () => 0,
    update: (state, sample) => {
      samples.push(sample);
      return state + 1;
    },
    limit: () => limit,
    rttNoLoad,
  };
}

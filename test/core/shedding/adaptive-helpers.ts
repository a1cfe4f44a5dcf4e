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

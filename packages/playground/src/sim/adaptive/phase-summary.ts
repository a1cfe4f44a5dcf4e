import type { AdaptiveSimResult, LaneKind } from './adaptive-sim.js';

/** One lane over one phase (its second half, once the controller has had time to react). */
export interface PhaseSummary {
  readonly lane: LaneKind;
  /** `load×speed`, e.g. `200%` or `100% at half speed`. */
  readonly phase: string;
  readonly index: number;
  /** The limit over the phase's second half (NaN without a limiter). */
  readonly limit: { readonly median: number; readonly min: number; readonly max: number };
  /** Means over the phase's second half. */
  readonly goodput: number;
  readonly latency: number;
  readonly drops: number;
}

const finite = (values: number[]) => values.filter((v) => Number.isFinite(v));
const mean = (values: number[]) => {
  const f = finite(values);
  return f.length === 0 ? Number.NaN : f.reduce((a, b) => a + b, 0) / f.length;
};

/** Each lane's settled behaviour per phase: the phase's second half. */
export function phaseSummaries(result: AdaptiveSimResult): PhaseSummary[] {
  const out: PhaseSummary[] = [];
  const bucket = result.config.bucket;
  for (const lane of result.lanes) {
    result.config.phases.forEach((phase, index) => {
      const start = result.phaseStarts[index]!;
      const from = Math.floor((start + phase.duration / 2) / bucket);
      const to = Math.floor((start + phase.duration) / bucket);
      const limits = finite(lane.limit.slice(from, to)).sort((a, b) => a - b);
      out.push({
        lane: lane.kind,
        phase: `${Math.round(phase.load * 100)}%${phase.speed === 1 ? '' : ` at ${phase.speed}× speed`}`,
        index,
        limit:
          limits.length === 0
            ? { median: Number.NaN, min: Number.NaN, max: Number.NaN }
            : {
                median: limits[Math.floor(limits.length / 2)]!,
                min: limits[0]!,
                max: limits[limits.length - 1]!,
              },
        goodput: mean(lane.goodput.slice(from, to)),
        latency: mean(lane.latency.slice(from, to)),
        drops: mean(lane.drops.slice(from, to)),
      });
    });
  }
  return out;
}

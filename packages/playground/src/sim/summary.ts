import { EPSILON } from '@sluice/core/adapter';
import type { LaneRun } from './simulate.js';
import type { Trace } from './trace.js';

/** The busiest window of one limit: the most units it admitted to one key within its `window`. */
export interface WorstWindow {
  /** The limit's name. */
  readonly limit: string;
  /** The limit's quota (`algorithm.limit`: capacity, burst + queue, or requests per window). */
  readonly quota: number;
  /** The limit's window, ms (`algorithm.window`). */
  readonly window: number;
  /** Most units admitted to one key in any window `(t - window, t]`. */
  readonly units: number;
  /** Where: the key and the window's end, ms (undefined when nothing was admitted). */
  readonly key: string | undefined;
  readonly at: number | undefined;
}

export interface LaneSummary {
  readonly name: string;
  readonly offered: number;
  readonly admitted: number;
  readonly refused: number;
  readonly admittedUnits: number;
  readonly refusedUnits: number;
  readonly neverAdmissible: number;
  /** The longest `delay` told to an admitted request, ms (leaky bucket queue; 0 otherwise). */
  readonly maxDelay: number;
  /** Per limit of the lane: its busiest window and the requests it refused. */
  readonly limits: readonly (WorstWindow & { readonly refused: number })[];
}

export function summarize(trace: Trace, runs: readonly LaneRun[]): LaneSummary[] {
  return runs.map((run) => {
    let maxDelay = 0;
    for (let i = 0; i < trace.length; i++) if (run.delay[i]! > maxDelay) maxDelay = run.delay[i]!;
    return {
      name: run.lane.name,
      offered: trace.length,
      admitted: run.admitted,
      refused: run.refused,
      admittedUnits: run.admittedUnits,
      refusedUnits: run.refusedUnits,
      neverAdmissible: run.neverAdmissible,
      maxDelay,
      limits: run.lane.limits.map((limit, j) => ({
        ...worstWindow(trace, run.allowed, limit.algorithm.window, limit.algorithm.limit, limit.name),
        refused: run.refusedByLimit[j]!,
      })),
    };
  });
}

/**
 * The most units admitted to one key in any window `(t - window, t]`, t an admitted request's
 * time: the admitted requests grouped by key (a counting sort: O(n)), then two pointers over each
 * key's times. Times are compared as the algorithms compare them, read EPSILON ms late: two
 * requests `window` apart to within float rounding (1000/15 ms steps) are a whole window apart.
 */
export function worstWindow(
  trace: Trace,
  allowed: Uint8Array,
  window: number,
  quota: number,
  limit: string,
): WorstWindow {
  const { times, keys, costs, names } = trace;
  const starts = new Uint32Array(names.length + 1);
  for (let i = 0; i < trace.length; i++) if (allowed[i]) starts[keys[i]! + 1]!++;
  for (let k = 0; k < names.length; k++) starts[k + 1]! += starts[k]!;
  const order = new Uint32Array(starts[names.length]!);
  const fill = starts.slice(0, names.length);
  for (let i = 0; i < trace.length; i++) if (allowed[i]) order[fill[keys[i]!]!++] = i;
  let best = 0;
  let bestKey: string | undefined;
  let bestAt: number | undefined;
  for (let k = 0; k < names.length; k++) {
    let sum = 0;
    let left = starts[k]!;
    for (let right = starts[k]!; right < starts[k + 1]!; right++) {
      const end = times[order[right]!]!;
      sum += costs[order[right]!]!;
      while (times[order[left]!]! <= end + EPSILON - window) sum -= costs[order[left++]!]!;
      if (sum > best) {
        best = sum;
        bestKey = names[k];
        bestAt = end;
      }
    }
  }
  return { limit, quota, window, units: best, key: bestKey, at: bestAt };
}

/** ms as a short readable duration: `250 ms`, `1 s`, `1.5 min`, `2 h`. */
export function formatMs(ms: number): string {
  if (ms < 1000) return `${round(ms)} ms`;
  if (ms < 60_000) return `${round(ms / 1000)} s`;
  if (ms < 3_600_000) return `${round(ms / 60_000)} min`;
  return `${round(ms / 3_600_000)} h`;
}

function round(value: number): string {
  return String(Number(value.toPrecision(3)));
}

/** The summary as an aligned text table, as `pnpm simulate` prints it. */
export function formatSummary(summaries: readonly LaneSummary[]): string {
  const header = [
    'limit',
    'admitted',
    'refused',
    'units admitted',
    'refused by',
    'busiest window, one key',
    'max delay',
  ];
  const busiest = (l: WorstWindow) =>
    `${l.units} in ${formatMs(l.window)} (limit ${l.quota}${l.units > l.quota ? `, ${(l.units / l.quota).toFixed(2)}×` : ''})`;
  const rows: string[][] = [];
  for (const s of summaries) {
    const lane = [
      s.name,
      `${s.admitted} / ${s.offered}`,
      `${s.refused}${s.neverAdmissible > 0 ? ` (${s.neverAdmissible} never)` : ''}`,
      `${s.admittedUnits}`,
    ];
    const delay = s.maxDelay > 0 ? formatMs(s.maxDelay) : '-';
    if (s.limits.length === 1) {
      rows.push([...lane, '', busiest(s.limits[0]!), delay]);
      continue;
    }
    // A layered lane: its totals, then each limit's own line.
    rows.push([...lane, '', '', delay]);
    for (const l of s.limits) rows.push([`  ${l.limit}`, '', '', '', `${l.refused}`, busiest(l), '']);
  }
  const widths = header.map((h, col) => Math.max(h.length, ...rows.map((r) => r[col]!.length)));
  const format = (cells: readonly string[]) =>
    cells
      .map((c, col) => (col === 0 ? c.padEnd(widths[col]!) : c.padStart(widths[col]!)))
      .join('  ')
      .trimEnd();
  return [format(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(format)].join('\n');
}

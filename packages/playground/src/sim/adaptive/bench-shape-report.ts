import type { ControllerKind } from '@sluice/core';
import {
  type BenchShape,
  halvingShape,
  type LimitRecovery,
  runShape,
  SHAPE_SUBJECTS,
  type ShapeRound,
  shapeDeadline,
} from './bench-shape.js';

const ADAPTIVE: readonly ControllerKind[] = ['vegas', 'gradient2', 'aimd', 'envoy-gradient'];

/** Every subject at 2× and 4×, then each controller's settling after the halving. */
export interface ShapeReport {
  readonly shape: BenchShape;
  readonly deadline: number;
  readonly rounds: ShapeRound[];
  readonly recovery: (LimitRecovery & { readonly subject: ControllerKind })[];
}

export function benchShapeReport(shape: BenchShape): ShapeReport {
  const deadline = shapeDeadline(shape);
  const rounds = SHAPE_SUBJECTS.flatMap((subject) =>
    [2, 4].map((load) => runShape(subject, load, shape, { deadline })),
  );
  const recovery = ADAPTIVE.map((subject) => ({ subject, ...halvingShape(subject, shape) }));
  return { shape, deadline, rounds, recovery };
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

/** The report as the bench prints its own (Markdown tables), so the two read side by side. */
export function formatShapeReport(report: ShapeReport): string {
  const { shape, deadline } = report;
  const lines = [
    `Bench shape (virtual time, seed ${shape.seed}): downstream ${shape.slots} slots × ${shape.serviceTime} ms, ${shape.arrivals} arrivals, 1 in ${shape.criticalEvery} critical, ${shape.duration / 1000} s rounds; deadline ${deadline} ms (2 × no-load p99)${shape.loop === undefined ? '' : `; busy event loop: ${shape.loop.turn} ms turns, a ${shape.loop.stall} ms stall (±50%) one turn in ${shape.loop.stallEvery}`}`,
    '',
    '| subject | load | goodput/s | in deadline/s | p99 served ms | critical served | low served | limit (median) |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const r of report.rounds) {
    const half = r.limits.slice(Math.floor(r.limits.length / 2)).sort((a, b) => a - b);
    const limit = half.length === 0 ? '–' : String(half[Math.floor(half.length / 2)]);
    lines.push(
      `| ${r.subject} | ${r.load}× | ${Math.round(r.goodput)} | ${Math.round(r.goodputInDeadline)} | ${r.p99.toFixed(1)} | ${pct(r.criticalServed)} | ${pct(r.lowServed)} | ${limit} |`,
    );
  }
  lines.push(
    '',
    'The downstream halves its capacity half way through 40 s at 1.5×:',
    '',
    '| subject | settles within ±20% after (s) | settles at | swing there |',
    '|---|---|---|---|',
  );
  for (const s of report.recovery)
    lines.push(`| ${s.subject} | ${s.after.toFixed(1)} | ${s.steadyAt} | ±${pct(s.swing)} |`);
  return lines.join('\n');
}

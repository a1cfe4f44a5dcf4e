/**
 * `pnpm simulate adaptive`: the adaptive concurrency simulator on the command line. Writes one SVG
 * per controller (each beside the unprotected service) and one with every lane, and prints a
 * summary per phase.
 *
 *   pnpm simulate adaptive [--out-dir charts] [--seed 1]
 *   pnpm simulate adaptive --bench-shape [--arrivals even|poisson] [--busy-loop] [--seconds 20] [--seed 1]
 *
 * `--bench-shape` runs the HTTP bench's shape instead (`sim/adaptive/bench-shape.ts`) and prints
 * its tables: no charts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type AdaptiveSimResult, DEFAULT_SIM, simulateAdaptive } from './sim/adaptive/adaptive-sim.js';
import { renderAdaptiveSvg } from './sim/adaptive/adaptive-svg.js';
import { BENCH_SHAPE, BUSY_LOOP } from './sim/adaptive/bench-shape.js';
import { benchShapeReport, formatShapeReport } from './sim/adaptive/bench-shape-report.js';
import { phaseSummaries } from './sim/adaptive/phase-summary.js';

const USAGE = `usage: pnpm simulate adaptive [--out-dir dir] [--seed n]
       pnpm simulate adaptive --bench-shape [--arrivals even|poisson] [--busy-loop] [--seconds n] [--seed n]
  --out-dir      where to write the SVG charts (default: adaptive-charts)
  --seed         the generator's seed: the same seed, the same run (default: 1)
  --bench-shape  the HTTP bench's shape instead (a 20 × 50 ms downstream at 2× and 4×, 1 in 7
                 critical; then the downstream halving): prints its tables, writes no chart
  --arrivals     with --bench-shape: even (the bench's open loop, default) or poisson
  --busy-loop    with --bench-shape: the app's event loop busy, as the bench's Express app at 4×
                 (2 ms turns, a 10–30 ms stall one turn in 50)
  --seconds      with --bench-shape: seconds per round (default: 20)`;

export function adaptiveMain(argv: readonly string[]): number {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      'out-dir': { type: 'string', default: 'adaptive-charts' },
      seed: { type: 'string', default: '1' },
      'bench-shape': { type: 'boolean', default: false },
      arrivals: { type: 'string', default: 'even' },
      'busy-loop': { type: 'boolean', default: false },
      seconds: { type: 'string', default: '20' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const seed = Number(values.seed);
  if (!Number.isInteger(seed) || seed < 0) {
    console.error(`--seed must be a whole number ≥ 0; got ${JSON.stringify(values.seed)}`);
    return 2;
  }
  if (values['bench-shape']) {
    const arrivals = values.arrivals;
    const seconds = Number(values.seconds);
    if (arrivals !== 'even' && arrivals !== 'poisson') {
      console.error(`--arrivals must be even or poisson; got ${JSON.stringify(arrivals)}`);
      return 2;
    }
    if (!Number.isInteger(seconds) || seconds < 1) {
      console.error(`--seconds must be a whole number ≥ 1; got ${JSON.stringify(values.seconds)}`);
      return 2;
    }
    const shape = {
      ...BENCH_SHAPE,
      seed,
      arrivals,
      duration: seconds * 1000,
      ...(values['busy-loop'] ? { loop: BUSY_LOOP } : {}),
    } as const;
    console.log(formatShapeReport(benchShapeReport(shape)));
    return 0;
  }
  const result = simulateAdaptive({ ...DEFAULT_SIM, seed });
  const dir = values['out-dir'];
  mkdirSync(dir, { recursive: true });
  const title = (what: string) =>
    `sluice adaptive concurrency: ${what} (capacity ${capacity(result)}/s; load 50%, 90%, 200%, 100%, then half capacity; seed ${seed})`;
  const written = [join(dir, 'all.svg')];
  writeFileSync(written[0]!, renderAdaptiveSvg(result, { title: title('every controller') }));
  for (const lane of result.lanes) {
    if (lane.kind === 'none') continue;
    const path = join(dir, `${lane.kind}.svg`);
    writeFileSync(path, renderAdaptiveSvg(result, { title: title(lane.kind), lanes: ['none', lane.kind] }));
    written.push(path);
  }
  console.log(formatPhases(result));
  for (const path of written) console.log(`wrote ${path}`);
  return 0;
}

function capacity(result: AdaptiveSimResult): number {
  return Math.round((result.config.workers / result.config.serviceTime) * 1000);
}

function formatPhases(result: AdaptiveSimResult): string {
  const rows = [['lane', 'phase', 'limit (median, min–max)', 'goodput/s', 'latency ms', 'drops/s']];
  for (const s of phaseSummaries(result)) {
    rows.push([
      s.lane,
      s.phase,
      Number.isNaN(s.limit.median) ? '–' : `${s.limit.median} (${s.limit.min}–${s.limit.max})`,
      String(Math.round(s.goodput)),
      String(Math.round(s.latency)),
      String(Math.round(s.drops)),
    ]);
  }
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) => r.map((cell, c) => cell.padEnd(widths[c]!)).join('  ')).join('\n');
}

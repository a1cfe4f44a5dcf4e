/**
 * `pnpm simulate adaptive`: the adaptive concurrency simulator on the command line. Writes one SVG
 * per controller (each beside the unprotected service) and one with every lane, and prints a
 * summary per phase.
 *
 *   pnpm simulate adaptive [--out-dir charts] [--seed 1]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type AdaptiveSimResult, DEFAULT_SIM, simulateAdaptive } from './sim/adaptive/adaptive-sim.js';
import { renderAdaptiveSvg } from './sim/adaptive/adaptive-svg.js';
import { phaseSummaries } from './sim/adaptive/phase-summary.js';

const USAGE = `usage: pnpm simulate adaptive [--out-dir dir] [--seed n]
  --out-dir  where to write the SVG charts (default: adaptive-charts)
  --seed     the generator's seed: the same seed, the same run (default: 1)`;

export function adaptiveMain(argv: readonly string[]): number {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      'out-dir': { type: 'string', default: 'adaptive-charts' },
      seed: { type: 'string', default: '1' },
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

/**
 * `pnpm simulate`: the playground's simulation on the command line, for CI and docs.
 *
 *   pnpm simulate --config limits.json --trace t.csv [--out chart.svg] [--title "…"]
 *
 * Prints the summary table and writes an SVG chart. The config is the page's state as JSON:
 * `{ "mode": "side-by-side", "limits": [{ "algorithm": "tokenBucket", "capacity": 10,
 * "refillInterval": "1s" }], "traffic": [{ "pattern": "steady", "rate": 20 }] }`; `--trace`
 * (a `time,key,cost` CSV) replaces its traffic.
 *
 *   pnpm simulate adaptive [--out-dir charts] [--seed 1]
 *
 * runs the adaptive concurrency simulator instead (`adaptive-cli.ts`).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { SluiceError } from '@sluice/core';
import { adaptiveMain } from './adaptive-cli.js';
import { bucketize } from './sim/buckets.js';
import { configFromJson, lanesOf, type PlaygroundConfig } from './sim/config.js';
import { simulate } from './sim/simulate.js';
import { formatMs, formatSummary, summarize } from './sim/summary.js';
import { renderSvg } from './sim/svg.js';
import { TraceError, toCsv } from './sim/trace.js';
import { makeTrace } from './sim/traffic.js';
import { encodeState } from './sim/url-state.js';

const USAGE = `usage: pnpm simulate --config limits.json [--trace t.csv] [--out chart.svg] [--title text]
  --config       the limits (and traffic), as JSON: { mode, limits, traffic, headers }
  --trace        a time,key,cost CSV (time in ms) that replaces the config's traffic
  --out          where to write the SVG chart (default: simulation.svg)
  --title        the chart's title (default: the limits)
  --subtitle     a second line under the title (default: the traffic)
  --write-trace  also write the trace simulated, as CSV
  --buckets      about how many time buckets to plot (default: 200)`;

function main(argv: readonly string[]): number {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      config: { type: 'string' },
      trace: { type: 'string' },
      out: { type: 'string', default: 'simulation.svg' },
      title: { type: 'string' },
      subtitle: { type: 'string' },
      'write-trace': { type: 'string' },
      buckets: { type: 'string', default: '200' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (values.config === undefined) {
    console.error(`--config is required\n${USAGE}`);
    return 2;
  }
  const buckets = Number(values.buckets);
  if (!Number.isInteger(buckets) || buckets < 1) {
    console.error(`--buckets must be a whole number ≥ 1; got ${JSON.stringify(values.buckets)}`);
    return 2;
  }
  let config: PlaygroundConfig = configFromJson(JSON.parse(readFileSync(values.config, 'utf8')));
  if (values.trace !== undefined) {
    config = { ...config, traffic: [{ pattern: 'csv', text: readFileSync(values.trace, 'utf8') }] };
  }
  const lanes = lanesOf(config);
  const trace = makeTrace(config.traffic);
  const runs = simulate(trace, lanes);
  const summaries = summarize(trace, runs);
  const span = trace.times[trace.length - 1]! - trace.times[0]!;
  const describe =
    values.trace === undefined ? config.traffic.map((t) => t.pattern).join(' + ') : `trace ${values.trace}`;
  const subtitle =
    values.subtitle ??
    `${trace.length} requests from ${trace.names.length} key${trace.names.length === 1 ? '' : 's'} over ${formatMs(span)} (${describe}); ${config.mode}`;
  console.log(subtitle);
  console.log('');
  console.log(formatSummary(summaries));
  const svg = renderSvg(bucketize(trace, runs, buckets), summaries, {
    title:
      values.title ?? `sluice: ${lanes.map((l) => l.name).join(config.mode === 'layered' ? ' + ' : ' vs ')}`,
    subtitle,
  });
  writeFileSync(values.out, svg);
  console.log('');
  console.log(`wrote ${values.out}`);
  if (values['write-trace'] !== undefined) {
    writeFileSync(values['write-trace'], toCsv(trace));
    console.log(`wrote ${values['write-trace']}`);
  }
  if (values.trace === undefined)
    console.log(
      `the same in the playground (pnpm playground): http://127.0.0.1:5173/#${encodeState(config)}`,
    );
  return 0;
}

try {
  const argv = process.argv.slice(2);
  process.exitCode = argv[0] === 'adaptive' ? adaptiveMain(argv.slice(1)) : main(argv);
} catch (error) {
  const code = (error as { code?: unknown }).code;
  const expected =
    error instanceof SluiceError ||
    error instanceof TraceError ||
    error instanceof SyntaxError || // the config is not JSON
    (typeof code === 'string' && (code.startsWith('ERR_PARSE_ARGS') || code === 'ENOENT'));
  if (expected) {
    console.error(
      `simulate: ${error instanceof SluiceError ? `${error.code}: ` : ''}${(error as Error).message}`,
    );
    process.exitCode = 1;
  } else {
    throw error;
  }
}

import './style.css';
import { bucketize } from '../sim/buckets.js';
import { clientView } from '../sim/client-view.js';
import { type Lane, lanesOf, type PlaygroundConfig } from '../sim/config.js';
import { decisionAt, type LaneRun, simulate } from '../sim/simulate.js';
import { formatMs, type LaneSummary, summarize } from '../sim/summary.js';
import { LANE_COLORS } from '../sim/svg.js';
import { requestAt, type Trace } from '../sim/trace.js';
import { makeTrace } from '../sim/traffic.js';
import { decodeState, encodeState } from '../sim/url-state.js';
import { Charts } from './charts.js';
import { DEFAULT_CONFIG } from './defaults.js';
import { ConfigForm } from './form.js';

/** How long the last run took, ms; read by the browser test. */
export interface Timing {
  readonly requests: number;
  /** Making the trace (generating it or reading the CSV). */
  readonly traceMs: number;
  /** Simulating every lane, summarising and aggregating to buckets. */
  readonly simulateMs: number;
  /** Drawing the charts and the table, until the next frame is on screen. */
  readonly drawMs: number;
}

declare global {
  interface Window {
    /** The state of the page, for the browser test: the last run's timing, the runs finished, the configuration. */
    sluicePlayground?: { timing: Timing | undefined; runs: number; config: PlaygroundConfig };
  }
}

/** A CSV longer than this stays out of the link (it would make it unwieldy to share). */
const MAX_CSV_IN_URL = 100_000;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const status = $('status');
const problem = $('problem');
const summaryBody = $<HTMLTableSectionElement>('summary-body');
const headersBox = $('headers');

let config = readUrl();
/** The last run, for the headers at a picked time; `origin` is where the time axis starts, ms. */
let last: { trace: Trace; lanes: Lane[]; runs: LaneRun[]; origin: number } | undefined;
let picked = Number(new URLSearchParams(stateText()).get('at') ?? Number.NaN);
let generation = 0;
let timer: ReturnType<typeof setTimeout> | undefined;

const charts = new Charts($('charts'), (ms) => {
  picked = ms;
  writeUrl();
  showHeaders();
});
new ConfigForm($('form'), config, (next) => {
  config = next;
  picked = Number.NaN;
  writeUrl();
  clearTimeout(timer);
  timer = setTimeout(run, 200);
});
window.addEventListener('resize', () => charts.resize());
writeUrl();
// The state edited by hand in the address bar: run it (our own writes use replaceState: no event).
window.addEventListener('hashchange', () => location.reload());
$('copy-link').addEventListener('click', () => {
  void navigator.clipboard?.writeText(location.href).then(() => {
    $('copy-link').textContent = 'link copied';
  });
});
void run();

/** The state in the URL: after `#`, or after `?` in a link written that way. */
function stateText(): string {
  return location.hash.length > 1 ? location.hash : location.search;
}

function readUrl(): PlaygroundConfig {
  try {
    return decodeState(stateText(), DEFAULT_CONFIG);
  } catch (error) {
    showProblem(error);
    return DEFAULT_CONFIG;
  }
}

function writeUrl(): void {
  const shared: PlaygroundConfig = {
    ...config,
    traffic: config.traffic.map((s) =>
      s.pattern === 'csv' && String(s.text ?? '').length > MAX_CSV_IN_URL ? { pattern: 'csv' } : s,
    ),
  };
  const at = Number.isFinite(picked) ? `&at=${Math.round(picked * 1000) / 1000}` : '';
  history.replaceState(null, '', `${location.pathname}#${encodeState(shared)}${at}`);
  window.sluicePlayground = {
    timing: window.sluicePlayground?.timing,
    runs: window.sluicePlayground?.runs ?? 0,
    config,
  };
  const dropped = shared.traffic.some((s, i) => s !== config.traffic[i]);
  $('link-note').textContent = dropped
    ? `The CSV trace (over ${MAX_CSV_IN_URL / 1000} KB) is not in the link; the rest of the configuration is.`
    : '';
}

async function run(): Promise<void> {
  const mine = ++generation;
  document.body.dataset.state = 'running';
  status.textContent = 'simulating…';
  problem.textContent = '';
  await nextFrame();
  if (mine !== generation) return;
  try {
    const t0 = performance.now();
    const lanes = lanesOf(config);
    const trace = makeTrace(config.traffic);
    const t1 = performance.now();
    const runs = simulate(trace, lanes);
    const summaries = summarize(trace, runs);
    // About one bucket per 8 px: finer would draw single requests as a comb of 0s and 1s.
    const buckets = bucketize(trace, runs, Math.max(100, Math.floor($('charts').clientWidth / 8)));
    const t2 = performance.now();
    const hasDelay = lanes.map((lane) => lane.limits.some((l) => l.algorithm.kind === 'leaky-bucket-queue'));
    charts.draw(buckets, summaries, hasDelay);
    renderSummary(summaries, buckets.origin);
    last = { trace, lanes, runs, origin: buckets.origin };
    showHeaders();
    await nextFrame();
    const t3 = performance.now();
    const timing: Timing = { requests: trace.length, traceMs: t1 - t0, simulateMs: t2 - t1, drawMs: t3 - t2 };
    window.sluicePlayground = { timing, runs: (window.sluicePlayground?.runs ?? 0) + 1, config };
    const span = trace.times[trace.length - 1]! - trace.times[0]!;
    status.textContent =
      `${trace.length.toLocaleString('en')} requests from ${trace.names.length.toLocaleString('en')} key${trace.names.length === 1 ? '' : 's'} over ${formatMs(span)} · ` +
      `traffic made in ${ms(timing.traceMs)}, simulated in ${ms(timing.simulateMs)}, drawn in ${ms(timing.drawMs)} · ` +
      `bucket ${formatMs(buckets.width)}`;
    document.body.dataset.state = 'done';
  } catch (error) {
    if (mine !== generation) return;
    showProblem(error);
    status.textContent = '';
    window.sluicePlayground = { timing: undefined, runs: (window.sluicePlayground?.runs ?? 0) + 1, config };
    document.body.dataset.state = 'error';
  }
}

function renderSummary(summaries: readonly LaneSummary[], origin: number): void {
  const rows: HTMLTableRowElement[] = [];
  summaries.forEach((s, lane) => {
    const layered = s.limits.length > 1;
    const row = tr(
      [
        cell(s.name, { style: `color:${LANE_COLORS[lane % LANE_COLORS.length]}`, class: 'name' }),
        cell(s.offered.toLocaleString('en')),
        cell(s.admitted.toLocaleString('en'), { class: 'admitted' }),
        cell(
          `${s.refused.toLocaleString('en')}${s.neverAdmissible > 0 ? ` (${s.neverAdmissible} never)` : ''}`,
          { class: 'refused' },
        ),
        cell(`${s.admittedUnits.toLocaleString('en')} / ${s.refusedUnits.toLocaleString('en')}`),
        cell(layered ? '' : busiest(s.limits[0]!, origin)),
        cell(s.maxDelay > 0 ? formatMs(s.maxDelay) : '–'),
      ],
      { 'data-lane': s.name, 'data-admitted': String(s.admitted), 'data-refused': String(s.refused) },
    );
    if (!layered) row.dataset.busiest = String(s.limits[0]!.units);
    rows.push(row);
    if (!layered) return;
    for (const l of s.limits) {
      rows.push(
        tr(
          [
            cell(`└ ${l.limit}`, { class: 'sub' }),
            cell(''),
            cell(''),
            cell(`refused by it: ${l.refused.toLocaleString('en')}`, { class: 'refused' }),
            cell(''),
            cell(busiest(l, origin)),
            cell(''),
          ],
          { 'data-limit': l.limit, 'data-busiest': String(l.units), 'data-refused-by': String(l.refused) },
        ),
      );
    }
  });
  summaryBody.replaceChildren(...rows);
}

function busiest(l: LaneSummary['limits'][number], origin: number): string {
  const over = l.units > l.quota;
  return `${l.units.toLocaleString('en')} in ${formatMs(l.window)} vs limit ${l.quota.toLocaleString('en')}${over ? ` (${(l.units / l.quota).toFixed(2)}×)` : ''}${l.key === undefined ? '' : `, key ${l.key}, ending at ${formatMs(l.at! - origin)}`}`;
}

/** The response each lane would give to the request at or before the picked time. */
function showHeaders(): void {
  if (last === undefined) return;
  const { trace, lanes, origin } = last;
  if (!Number.isFinite(picked)) {
    headersBox.replaceChildren(para('Click on a chart to see the headers a client gets at that moment.'));
    delete headersBox.dataset.index;
    return;
  }
  const index = Math.max(0, requestAt(trace, picked));
  headersBox.dataset.index = String(index);
  const key = trace.names[trace.keys[index]!]!;
  const intro = para(
    `Request #${index + 1} of ${trace.length.toLocaleString('en')}, at ${formatMs(trace.times[index]! - origin)}, key ${key}, cost ${trace.costs[index]}:`,
  );
  const blocks = lanes.map((lane, i) => {
    const view = clientView(decisionAt(trace, lane, index), lane.limits, config.headers);
    const lines = [
      `HTTP/1.1 ${view.status} ${REASONS[view.status] ?? ''}`,
      ...view.headers.map(([n, v]) => `${n}: ${v}`),
    ];
    const box = document.createElement('div');
    box.className = 'response';
    box.dataset.lane = lane.name;
    box.dataset.status = String(view.status);
    const title = document.createElement('h3');
    title.style.color = LANE_COLORS[i % LANE_COLORS.length]!;
    title.textContent = lane.name + (view.delay > 0 ? ` — held ${view.delay} ms, then served` : '');
    const pre = document.createElement('pre');
    pre.textContent = lines.join('\n');
    box.append(title, pre);
    if (view.body !== undefined) {
      const body = document.createElement('details');
      const summary = document.createElement('summary');
      summary.textContent = 'problem body (RFC 9457)';
      const json = document.createElement('pre');
      json.textContent = JSON.stringify(view.body, null, 2);
      body.append(summary, json);
      box.append(body);
    }
    return box;
  });
  headersBox.replaceChildren(intro, ...blocks);
}

const REASONS: Record<number, string> = { 200: 'OK', 429: 'Too Many Requests', 503: 'Service Unavailable' };

function showProblem(error: unknown): void {
  const code = (error as { code?: unknown }).code;
  problem.textContent = `${typeof code === 'string' ? `${code}: ` : ''}${(error as Error).message ?? String(error)}`;
}

function tr(cells: HTMLElement[], data: Record<string, string>): HTMLTableRowElement {
  const row = document.createElement('tr');
  for (const [name, value] of Object.entries(data)) row.setAttribute(name, value);
  row.append(...cells);
  return row;
}

function cell(text: string, attributes: Record<string, string> = {}): HTMLTableCellElement {
  const td = document.createElement('td');
  for (const [name, value] of Object.entries(attributes)) td.setAttribute(name, value);
  td.textContent = text;
  return td;
}

function para(text: string): HTMLParagraphElement {
  const p = document.createElement('p');
  p.textContent = text;
  return p;
}

function ms(value: number): string {
  return `${Math.round(value)} ms`;
}

function nextFrame(): Promise<void> {
  return new Promise((resolve) => requestAnimationFrame(() => resolve()));
}

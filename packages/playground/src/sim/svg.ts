import type { Buckets } from './buckets.js';
import { formatMs, type LaneSummary } from './summary.js';

/** One color per lane, the same on the page and in the SVG. */
export const LANE_COLORS = ['#1565c0', '#2e7d32', '#6a1b9a', '#ef6c00'] as const;
export const REFUSED_COLOR = '#c62828';
export const OFFERED_COLOR = '#9e9e9e';
export const DELAY_COLOR = '#8d6e63';

export interface SvgOptions {
  readonly title: string;
  /** A second line under the title (the traffic, say). */
  readonly subtitle?: string;
  readonly width?: number;
}

const esc = (text: string) =>
  text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
const f = (n: number) => n.toFixed(1);

/**
 * The run as a standalone SVG: one panel per lane, sharing the time axis and the request scale;
 * offered requests in grey, admitted in the lane's color, refused in red, and the longest delay
 * (leaky bucket queue) dashed on its own scale. Written by hand: a chart library needs a DOM.
 */
export function renderSvg(buckets: Buckets, summaries: readonly LaneSummary[], options: SvgOptions): string {
  const W = options.width ?? 860;
  const left = 52;
  const right = 64;
  const top = options.subtitle === undefined ? 64 : 80;
  const panel = 118;
  const plotH = 78;
  const bottom = 40;
  const H = top + panel * summaries.length + bottom;
  const plotW = W - left - right;
  const n = buckets.x.length;
  const span = n * buckets.width;
  const x = (b: number) => left + (b / n) * plotW;
  let peak = 1;
  for (let b = 0; b < n; b++) peak = Math.max(peak, buckets.offered[b]!);
  const scale = niceCeil(peak);

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text x="${left}" y="24" font-size="15" font-weight="600">${esc(options.title)}</text>`,
  );
  if (options.subtitle !== undefined)
    out.push(`<text x="${left}" y="42" fill="#555">${esc(options.subtitle)}</text>`);
  const legendY = top - 22;
  const legend: [string, string, string][] = [
    ['offered', OFFERED_COLOR, 'area'],
    ['admitted', LANE_COLORS[0], 'area'],
    ['refused', REFUSED_COLOR, 'line'],
  ];
  if (summaries.some((s) => s.maxDelay > 0)) legend.push(['longest delay (own scale)', DELAY_COLOR, 'dash']);
  let lx = left;
  for (const [label, color, kind] of legend) {
    out.push(
      kind === 'area'
        ? `<rect x="${lx}" y="${legendY - 9}" width="14" height="10" fill="${color}" fill-opacity="0.45" stroke="${color}"/>`
        : `<line x1="${lx}" y1="${legendY - 4}" x2="${lx + 14}" y2="${legendY - 4}" stroke="${color}" stroke-width="2"${kind === 'dash' ? ' stroke-dasharray="4 3"' : ''}/>`,
      `<text x="${lx + 19}" y="${legendY}">${esc(label)}</text>`,
    );
    lx += 30 + label.length * 6.5;
  }
  out.push(
    `<text x="${W - right}" y="${legendY}" text-anchor="end" fill="#555">requests per ${esc(formatMs(buckets.width))}</text>`,
  );

  summaries.forEach((summary, lane) => {
    const color = LANE_COLORS[lane % LANE_COLORS.length]!;
    const y0 = top + lane * panel + 28;
    const base = y0 + plotH;
    const y = (v: number) => base - (v / scale) * plotH;
    const worst = summary.limits
      .map(
        (l) =>
          `${summary.limits.length > 1 ? `${l.limit}: ` : ''}most in any ${formatMs(l.window)} ${l.units}, limit ${l.quota}`,
      )
      .join('; ');
    out.push(
      `<text x="${left}" y="${y0 - 10}"><tspan font-weight="600" fill="${color}">${esc(summary.name)}</tspan><tspan fill="#333"> — admitted ${summary.admitted} of ${summary.offered}, refused ${summary.refused}; ${esc(worst)}</tspan></text>`,
    );
    for (const v of [0, scale / 2, scale]) {
      out.push(
        `<line x1="${left}" y1="${f(y(v))}" x2="${left + plotW}" y2="${f(y(v))}" stroke="${v === 0 ? '#999' : '#e5e5e5'}"/>`,
        `<text x="${left - 6}" y="${f(y(v) + 4)}" text-anchor="end" fill="#555">${v}</text>`,
      );
    }
    const data = buckets.lanes[lane]!;
    out.push(
      `<path d="${area(buckets.offered, x, y, base)}" fill="${OFFERED_COLOR}" fill-opacity="0.35"/>`,
      `<path d="${area(data.admitted, x, y, base)}" fill="${color}" fill-opacity="0.45" stroke="${color}" stroke-width="1.2"/>`,
      `<path d="${step(data.refused, x, y)}" fill="none" stroke="${REFUSED_COLOR}" stroke-width="1.5"/>`,
    );
    if (summary.maxDelay > 0) {
      const dy = (v: number) => base - (v / summary.maxDelay) * plotH;
      out.push(
        `<path d="${step(data.delay, x, dy)}" fill="none" stroke="${DELAY_COLOR}" stroke-width="1.5" stroke-dasharray="4 3"/>`,
        `<text x="${left + plotW + 6}" y="${f(y0 + 4)}" fill="${DELAY_COLOR}">${esc(formatMs(summary.maxDelay))}</text>`,
        `<text x="${left + plotW + 6}" y="${f(base + 4)}" fill="${DELAY_COLOR}">0</text>`,
      );
    }
  });

  const axisY = top + panel * summaries.length - 6;
  const tick = niceTick(span / 1000);
  for (let s = 0; s <= span / 1000 + 1e-9; s += tick) {
    const tx = left + ((s * 1000) / span) * plotW;
    out.push(
      `<line x1="${f(tx)}" y1="${axisY - 4}" x2="${f(tx)}" y2="${axisY + 2}" stroke="#999"/>`,
      `<text x="${f(tx)}" y="${axisY + 15}" text-anchor="middle" fill="#555">${Number(s.toPrecision(6))}</text>`,
    );
  }
  out.push(
    `<text x="${left + plotW / 2}" y="${axisY + 31}" text-anchor="middle" fill="#555">time (s)</text>`,
    '</svg>',
  );
  return `${out.join('\n')}\n`;
}

/** A step area: each bucket flat across its width, closed down to the base line. */
function area(
  values: ArrayLike<number>,
  x: (b: number) => number,
  y: (v: number) => number,
  base: number,
): string {
  return `${step(values, x, y)} V${f(base)} H${f(x(0))} Z`;
}

function step(values: ArrayLike<number>, x: (b: number) => number, y: (v: number) => number): string {
  let d = `M${f(x(0))},${f(y(values[0] ?? 0))}`;
  for (let b = 0; b < values.length; b++) {
    if (b > 0) d += ` V${f(y(values[b]!))}`;
    d += ` H${f(x(b + 1))}`;
  }
  return d;
}

/** A round number at or above `v`, from `steps` × 10^k. */
function niceCeil(v: number, steps: readonly number[] = [1, 2, 3, 4, 5, 6, 8, 10]): number {
  const power = 10 ** Math.floor(Math.log10(v));
  for (const m of steps) if (m * power >= v) return m * power;
  return 10 * power;
}

/** A tick step of 1, 2 or 5 × 10^k giving 4 to 10 ticks over `span` seconds. */
function niceTick(span: number): number {
  return niceCeil(span / 8, [1, 2, 5, 10]);
}

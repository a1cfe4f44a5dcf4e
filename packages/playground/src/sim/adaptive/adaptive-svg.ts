import type { AdaptiveSimResult, LaneKind, LaneSeries } from './adaptive-sim.js';

/** Each lane's colour, the same on every panel (and on the page). */
export const LANE_COLOURS: Readonly<Record<LaneKind, string>> = {
  none: '#888888',
  vegas: '#1f77b4',
  gradient2: '#d62728',
  aimd: '#2ca02c',
  'envoy-gradient': '#9467bd',
};

/** The panels, each a series of every lane. */
export const PANELS: readonly {
  key: keyof LaneSeries & ('limit' | 'inFlight' | 'latency' | 'goodput' | 'drops');
  title: string;
}[] = [
  { key: 'limit', title: 'limit' },
  { key: 'inFlight', title: 'in flight' },
  { key: 'latency', title: 'mean latency of served requests (ms)' },
  { key: 'goodput', title: 'served within the timeout (per s)' },
  { key: 'drops', title: 'drops: refused or timed out (per s)' },
];

const WIDTH = 900;
const PANEL_HEIGHT = 150;
const LEFT = 60;
const RIGHT = 20;
const TOP = 50;
const GAP = 40;

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * The run as one SVG: a panel per series (limit, in flight, latency, goodput, drops), one line per
 * lane, dashed lines where the phases change. `lanes` picks lanes (one chart per controller).
 */
export function renderAdaptiveSvg(
  result: AdaptiveSimResult,
  options: { title: string; lanes?: readonly LaneKind[] },
): string {
  const lanes = result.lanes.filter((l) => options.lanes === undefined || options.lanes.includes(l.kind));
  const height = TOP + PANELS.length * (PANEL_HEIGHT + GAP) + 10;
  const end = result.times[result.times.length - 1] ?? 1;
  const x = (t: number) => LEFT + (t / end) * (WIDTH - LEFT - RIGHT);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="${WIDTH}" height="${height}" fill="white"/>`,
    `<text x="${LEFT}" y="20" font-size="14" font-weight="bold">${escapeXml(options.title)}</text>`,
  ];
  lanes.forEach((lane, i) => {
    const lx = LEFT + i * 130;
    out.push(
      `<rect x="${lx}" y="30" width="12" height="3" fill="${LANE_COLOURS[lane.kind]}"/>`,
      `<text x="${lx + 16}" y="35">${escapeXml(lane.kind)}</text>`,
    );
  });
  PANELS.forEach((panel, p) => {
    const top = TOP + p * (PANEL_HEIGHT + GAP) + 15;
    let max = 0;
    for (const lane of lanes) for (const v of lane[panel.key]) if (Number.isFinite(v) && v > max) max = v;
    max = max === 0 ? 1 : max * 1.05;
    const y = (v: number) => top + PANEL_HEIGHT - (v / max) * PANEL_HEIGHT;
    out.push(
      `<text x="${LEFT}" y="${top - 4}" font-weight="bold">${escapeXml(panel.title)}</text>`,
      `<rect x="${LEFT}" y="${top}" width="${WIDTH - LEFT - RIGHT}" height="${PANEL_HEIGHT}" fill="none" stroke="#ccc"/>`,
      `<text x="${LEFT - 4}" y="${top + 8}" text-anchor="end">${Math.round(max)}</text>`,
      `<text x="${LEFT - 4}" y="${top + PANEL_HEIGHT}" text-anchor="end">0</text>`,
    );
    for (const start of result.phaseStarts.slice(1)) {
      out.push(
        `<line x1="${x(start).toFixed(1)}" x2="${x(start).toFixed(1)}" y1="${top}" y2="${top + PANEL_HEIGHT}" stroke="#bbb" stroke-dasharray="3,3"/>`,
      );
    }
    for (const lane of lanes) {
      const values = lane[panel.key];
      let d = '';
      let pen = false;
      values.forEach((v, b) => {
        if (!Number.isFinite(v)) {
          pen = false;
          return;
        }
        d += `${pen ? 'L' : 'M'}${x(result.times[b]!).toFixed(1)},${y(v).toFixed(1)}`;
        pen = true;
      });
      if (d !== '') {
        out.push(`<path d="${d}" fill="none" stroke="${LANE_COLOURS[lane.kind]}" stroke-width="1.2"/>`);
      }
    }
  });
  out.push(
    `<text x="${WIDTH - RIGHT}" y="${height - 4}" text-anchor="end">${(end / 1000).toFixed(0)} s (virtual time)</text>`,
    '</svg>',
  );
  return `${out.join('\n')}\n`;
}

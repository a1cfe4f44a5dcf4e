/**
 * Renders docs/utilization-ramp.svg from the worker utilization shedder's own controller: a
 * simulated pressure episode (utilization high for a while, then in the dead zone, then low) and
 * the shed fraction of each priority over time. Deterministic: run it again after changing the
 * control law and commit the picture.
 *
 *   npx tsx scripts/render-ramp.ts
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { UtilizationShedder } from '../packages/core/src/index.js';

/** The episode: [seconds, utilization, label, shade]. */
const EPISODE: readonly (readonly [number, number, string, string])[] = [
  [40, 0.5, 'normal', '#ffffff'],
  [200, 0.95, 'overload', '#fdecea'],
  [50, 0.75, 'dead zone', '#f3f3f3'],
  [200, 0.3, 'load back to normal', '#eaf5ea'],
];

let signal = 0;
let now = 0;
const shedder = new UtilizationShedder({ timer: false, signal: () => signal, clock: () => now });
const priorities = shedder.priorities;

interface Point {
  t: number;
  u: number;
  fractions: Record<string, number>;
}
const points: Point[] = [{ t: 0, u: EPISODE[0]![1], fractions: shedder.fractions() }];
for (const [seconds, utilization] of EPISODE) {
  signal = utilization;
  for (let i = 0; i < seconds; i++) {
    now += 1000;
    shedder.sample();
    points.push({ t: now / 1000, u: utilization, fractions: shedder.fractions() });
  }
}

const W = 820;
const H = 420;
const left = 56;
const right = 70;
const top = 70;
const bottom = 90;
const plotW = W - left - right;
const plotH = H - top - bottom;
const total = points[points.length - 1]!.t;
const x = (t: number) => (left + (t / total) * plotW).toFixed(1);
const y = (v: number) => (top + (1 - v) * plotH).toFixed(1);
const path = (values: (p: Point) => number) =>
  points.map((p, i) => `${i === 0 ? 'M' : 'L'}${x(p.t)},${y(values(p))}`).join(' ');

const COLORS: Record<string, string> = { critical: '#2e7d32', normal: '#1565c0', low: '#e65100' };
const { good, bad, delay, ramp } = shedder.params;

const parts: string[] = [];
parts.push(
  `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, sans-serif" font-size="12">`,
  `<defs><marker id="tick" markerWidth="2" markerHeight="10" refX="1" refY="5" orient="auto"><line x1="1" y1="0" x2="1" y2="10" stroke="#333" stroke-width="2"/></marker></defs>`,
  `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
  `<text x="${left}" y="22" font-size="15" font-weight="600">Worker utilization shedder: shed fraction per priority over a pressure episode</text>`,
  `<text x="${left}" y="40" fill="#555">delay ${delay / 1000} s, ramp ${ramp / 1000} s, recovery ${shedder.params.recovery / 1000} s, dead zone ${good}–${bad}, sampled every ${shedder.interval / 1000} s (rendered by scripts/render-ramp.ts)</text>`,
);
// Phases.
let start = 0;
for (const [seconds, utilization, label, shade] of EPISODE) {
  const end = start + seconds;
  const middle = ((Number(x(start)) + Number(x(end))) / 2).toFixed(1);
  parts.push(
    `<rect x="${x(start)}" y="${top}" width="${(Number(x(end)) - Number(x(start))).toFixed(1)}" height="${plotH}" fill="${shade}"/>`,
    `<text x="${middle}" y="${top - 8}" text-anchor="middle" fill="#555">${label}, u = ${utilization}</text>`,
  );
  start = end;
}
// Axes and grid.
for (let v = 0; v <= 1.0001; v += 0.25) {
  parts.push(
    `<line x1="${left}" y1="${y(v)}" x2="${left + plotW}" y2="${y(v)}" stroke="#ddd"/>`,
    `<text x="${left - 8}" y="${Number(y(v)) + 4}" text-anchor="end">${v.toFixed(2)}</text>`,
  );
}
for (let t = 0; t <= total; t += 60) {
  parts.push(
    `<line x1="${x(t)}" y1="${top + plotH}" x2="${x(t)}" y2="${top + plotH + 5}" stroke="#333"/>`,
    `<text x="${x(t)}" y="${top + plotH + 18}" text-anchor="middle">${t}</text>`,
  );
}
parts.push(
  `<line x1="${left}" y1="${top + plotH}" x2="${left + plotW}" y2="${top + plotH}" stroke="#333"/>`,
  `<line x1="${left}" y1="${top}" x2="${left}" y2="${top + plotH}" stroke="#333"/>`,
  `<text x="${left + plotW / 2}" y="${top + plotH + 36}" text-anchor="middle">time (s)</text>`,
  `<text transform="translate(16 ${top + plotH / 2}) rotate(-90)" text-anchor="middle">shed fraction / utilization</text>`,
);
// Thresholds and the signal.
for (const [v, name] of [
  [good, 'good'],
  [bad, 'bad'],
] as const) {
  parts.push(
    `<line x1="${left}" y1="${y(v)}" x2="${left + plotW}" y2="${y(v)}" stroke="#999" stroke-dasharray="2 4"/>`,
    `<text x="${left + plotW + 6}" y="${Number(y(v)) + 4}" fill="#777">${name} ${v}</text>`,
  );
}
parts.push(
  `<path d="${path((p) => p.u)}" fill="none" stroke="#9e9e9e" stroke-width="1.5" stroke-dasharray="6 3"/>`,
);
// One line per priority, least important drawn last (on top).
priorities.forEach((name) => {
  const color = COLORS[name] ?? '#000';
  parts.push(
    `<path d="${path((p) => p.fractions[name]!)}" fill="none" stroke="${color}" stroke-width="2.5"/>`,
  );
});
// Legend.
const legend: [string, string, string][] = [
  ...priorities.map((name): [string, string, string] => [
    name,
    COLORS[name] ?? '#000',
    name === priorities[0] ? ' (never shed)' : '',
  ]),
  ['utilization', '#9e9e9e', ''],
];
legend.forEach(([name, color, note], i) => {
  const lx = left + i * 170;
  const ly = H - 22;
  parts.push(
    `<line x1="${lx}" y1="${ly}" x2="${lx + 24}" y2="${ly}" stroke="${color}" stroke-width="2.5"${name === 'utilization' ? ' stroke-dasharray="6 3"' : ''}/>`,
    `<text x="${lx + 30}" y="${ly + 4}">${name}${note}</text>`,
  );
});
// The delay and the ramp, measured from the start of the overload.
const overload = EPISODE[0]![0];
for (const [from, to, label] of [
  [overload, overload + delay / 1000, `delay ${delay / 1000} s`],
  [overload + delay / 1000, overload + (delay + ramp) / 1000, `ramp ${ramp / 1000} s`],
] as const) {
  const by = Number(y(0.12));
  parts.push(
    `<line x1="${x(from)}" y1="${by}" x2="${x(to)}" y2="${by}" stroke="#333" marker-start="url(#tick)" marker-end="url(#tick)"/>`,
    `<text x="${((Number(x(from)) + Number(x(to))) / 2).toFixed(1)}" y="${by - 6}" text-anchor="middle">${label}</text>`,
  );
}
parts.push('</svg>');

const target = fileURLToPath(new URL('../docs/utilization-ramp.svg', import.meta.url));
writeFileSync(target, `${parts.join('\n')}\n`);
console.log(`wrote ${target}: ${points.length} samples over ${total} s`);

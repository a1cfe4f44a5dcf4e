/** One bar: a label and a ratio (1 = the reference). */
export interface Bar {
  readonly label: string;
  readonly value: number;
  /** Bars of one group share a colour: sluice, the peers, the reference. */
  readonly kind: 'sluice' | 'peer' | 'reference';
}

export interface Chart {
  readonly title: string;
  readonly subtitle: string;
  readonly bars: readonly Bar[];
}

const COLOURS = { sluice: '#2f6fdb', peer: '#9aa3ad', reference: '#3c3c3c' } as const;

const escapeXml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/**
 * Horizontal bar charts stacked vertically, hand-written SVG: one chart per scenario, each bar a
 * ratio to its reference (a dashed line at 1×).
 */
export function barCharts(charts: readonly Chart[]): string {
  const width = 760;
  const labelWidth = 300;
  const barArea = width - labelWidth - 70;
  const barHeight = 16;
  const gap = 6;
  const parts: string[] = [];
  let y = 10;
  for (const chart of charts) {
    const max = Math.max(1, ...chart.bars.map((b) => (Number.isFinite(b.value) ? b.value : 0)));
    const scale = barArea / max;
    parts.push(
      `<text x="0" y="${y + 14}" font-size="14" font-weight="bold">${escapeXml(chart.title)}</text>`,
      `<text x="0" y="${y + 30}" font-size="11" fill="#555">${escapeXml(chart.subtitle)}</text>`,
    );
    y += 40;
    const top = y;
    for (const bar of chart.bars) {
      const value = Number.isFinite(bar.value) ? bar.value : 0;
      parts.push(
        `<text x="${labelWidth - 8}" y="${y + barHeight - 4}" font-size="12" text-anchor="end">${escapeXml(bar.label)}</text>`,
        `<rect x="${labelWidth}" y="${y}" width="${Math.max(1, value * scale).toFixed(1)}" height="${barHeight}" fill="${COLOURS[bar.kind]}"/>`,
        `<text x="${(labelWidth + value * scale + 4).toFixed(1)}" y="${y + barHeight - 4}" font-size="11">${Number.isFinite(bar.value) ? `${bar.value.toFixed(2)}×` : 'n/a'}</text>`,
      );
      y += barHeight + gap;
    }
    const one = (labelWidth + scale).toFixed(1);
    parts.push(
      `<line x1="${one}" y1="${top - 4}" x2="${one}" y2="${y - gap + 4}" stroke="#c00" stroke-dasharray="4 3"/>`,
    );
    y += 18;
  }
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y}" viewBox="0 0 ${width} ${y}" font-family="system-ui, -apple-system, Segoe UI, sans-serif">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Buckets } from '../sim/buckets.js';
import { formatMs, type LaneSummary } from '../sim/summary.js';
import { DELAY_COLOR, LANE_COLORS, OFFERED_COLOR, REFUSED_COLOR } from '../sim/svg.js';

const REMAINING_COLOR = '#37474f';

/**
 * One uPlot chart per lane, on a shared time axis with synchronised cursors: requests offered,
 * admitted and refused per bucket (left scale), the lowest `remaining` (right scale) and, for a
 * lane with a leaky bucket queue, the longest `delay`. A click reports the time under the cursor.
 */
export class Charts {
  private plots: uPlot[] = [];

  constructor(
    private readonly root: HTMLElement,
    private readonly onPick: (ms: number) => void,
  ) {}

  draw(buckets: Buckets, summaries: readonly LaneSummary[], hasDelay: readonly boolean[]): void {
    for (const plot of this.plots) plot.destroy();
    this.plots = [];
    this.root.replaceChildren();
    const width = Math.max(320, this.root.clientWidth);
    const stepped = uPlot.paths.stepped!({ align: 1 });
    let peak = 1;
    for (const v of buckets.offered) peak = Math.max(peak, v);
    const per = formatMs(buckets.width);
    summaries.forEach((summary, lane) => {
      const color = LANE_COLORS[lane % LANE_COLORS.length]!;
      const data = buckets.lanes[lane]!;
      const box = document.createElement('div');
      box.className = 'chart';
      box.dataset.lane = summary.name;
      const title = document.createElement('h3');
      title.style.color = color;
      title.textContent = summary.name;
      box.append(title);
      this.root.append(box);
      const series: uPlot.Series[] = [
        { label: 'time (s)', value: (_u, v) => (v == null ? '' : `${Number(v.toPrecision(6))} s`) },
        {
          label: `offered / ${per}`,
          stroke: OFFERED_COLOR,
          fill: 'rgba(158,158,158,0.28)',
          paths: stepped,
          scale: 'n',
        },
        { label: 'admitted', stroke: color, fill: `${color}66`, paths: stepped, scale: 'n', width: 1.5 },
        { label: 'refused', stroke: REFUSED_COLOR, paths: stepped, scale: 'n', width: 1.5 },
        {
          label: 'lowest remaining',
          stroke: REMAINING_COLOR,
          paths: stepped,
          scale: 'rem',
          width: 1,
          spanGaps: true,
        },
      ];
      const values: uPlot.AlignedData = [
        buckets.x,
        buckets.offered,
        data.admitted,
        data.refused,
        data.remaining,
      ];
      const axes: uPlot.Axis[] = [
        { label: 'time (s)', size: 36 },
        { scale: 'n', label: `requests / ${per}`, size: 48 },
        { scale: 'rem', side: 1, label: 'remaining', grid: { show: false }, size: 44 },
      ];
      if (hasDelay[lane]) {
        series.push({
          label: 'longest delay (ms)',
          stroke: DELAY_COLOR,
          dash: [5, 4],
          scale: 'ms',
          width: 1.5,
        });
        values.push(data.delay);
        axes.push({ scale: 'ms', side: 1, label: 'delay (ms)', grid: { show: false }, size: 52 });
      }
      // Bucket sums are steps, not samples: no dots on them.
      for (const s of series.slice(1)) s.points = { show: false };
      const plot = new uPlot(
        {
          width,
          height: 190,
          series,
          axes,
          scales: {
            x: { time: false },
            n: { range: [0, peak * 1.05] },
            rem: { range: (_u, _min, max) => [0, Math.max(1, max)] },
          },
          cursor: { sync: { key: 'sluice-lanes' }, drag: { x: false, y: false } },
          legend: { live: true },
        },
        values,
        box,
      );
      plot.over.addEventListener('click', () => {
        const left = plot.cursor.left;
        if (left === undefined || left < 0) return;
        this.onPick(buckets.origin + plot.posToVal(left, 'x') * 1000);
      });
      this.plots.push(plot);
    });
  }

  /** Follows the page's width. */
  resize(): void {
    const width = Math.max(320, this.root.clientWidth);
    for (const plot of this.plots) plot.setSize({ width, height: 190 });
  }
}

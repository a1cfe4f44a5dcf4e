/**
 * The adaptive concurrency page: the simulator (`sim/adaptive`) run in the browser for the seed in
 * the URL (`?seed=3`) or the input, drawn with the same SVG as `pnpm simulate adaptive`.
 */
import { DEFAULT_SIM, type LaneSeries, simulateAdaptive } from '../sim/adaptive/adaptive-sim.js';
import { renderAdaptiveSvg } from '../sim/adaptive/adaptive-svg.js';

/** What the page publishes for tests. */
declare global {
  interface Window {
    sluiceAdaptive?: { seed: number; totals: Record<string, LaneSeries['totals']> };
  }
}

const seedInput = document.getElementById('seed') as HTMLInputElement;
const status = document.getElementById('status')!;
const chart = document.getElementById('chart')!;
const summary = document.getElementById('summary-body')!;

function run(seed: number): void {
  document.body.dataset.state = 'running';
  status.textContent = `simulating seed ${seed}…`;
  try {
    const started = performance.now();
    const result = simulateAdaptive({ ...DEFAULT_SIM, seed });
    chart.innerHTML = renderAdaptiveSvg(result, { title: `every controller, seed ${seed}` });
    summary.replaceChildren(
      ...result.lanes.map((lane) => {
        const row = document.createElement('tr');
        for (const cell of [lane.kind, lane.totals.served, lane.totals.refused, lane.totals.timedOut]) {
          const td = document.createElement('td');
          td.textContent = String(cell);
          row.append(td);
        }
        return row;
      }),
    );
    window.sluiceAdaptive = {
      seed,
      totals: Object.fromEntries(result.lanes.map((lane) => [lane.kind, lane.totals])),
    };
    status.textContent = `seed ${seed}: ${Math.round(performance.now() - started)} ms`;
    document.body.dataset.state = 'done';
  } catch (error) {
    status.textContent = `the simulation failed: ${(error as Error).message}`;
    document.body.dataset.state = 'error';
  }
}

const fromUrl = Number(new URLSearchParams(location.search).get('seed') ?? '1');
const initial = Number.isInteger(fromUrl) && fromUrl >= 0 ? fromUrl : 1;
seedInput.value = String(initial);
document.getElementById('run')!.addEventListener('click', () => {
  const seed = Number(seedInput.value);
  if (!Number.isInteger(seed) || seed < 0) {
    status.textContent = 'the seed must be a whole number ≥ 0';
    return;
  }
  history.replaceState(null, '', `?seed=${seed}`);
  run(seed);
});
run(initial);

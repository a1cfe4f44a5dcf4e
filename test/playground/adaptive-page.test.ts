import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SIM, simulateAdaptive } from '../../packages/playground/src/sim/adaptive/adaptive-sim.js';
import { open, type Playground, startPlayground } from './browser.js';

declare const window: { sluiceAdaptive?: { seed: number; totals: Record<string, unknown> } };

let playground: Playground;
beforeAll(async () => {
  playground = await startPlayground();
}, 120_000);
afterAll(async () => {
  await playground?.close();
});

describe('the adaptive concurrency page (built, in Chromium)', () => {
  it('runs the seed in its URL, with the totals Node gets for that seed, and draws every lane', async () => {
    const page = await open(playground, 'adaptive.html?seed=3');
    const shown = await page.evaluate(() => window.sluiceAdaptive);
    const expected = simulateAdaptive({ ...DEFAULT_SIM, seed: 3 });
    expect(shown).toEqual({
      seed: 3,
      totals: Object.fromEntries(expected.lanes.map((lane) => [lane.kind, lane.totals])),
    });
    // 5 panels × 5 lanes, less the unprotected lane's limit.
    expect(await page.locator('#chart svg path').count()).toBe(24);
    expect(await page.locator('#summary-body tr').count()).toBe(5);
    await page.close();
  });
});

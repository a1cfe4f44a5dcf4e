import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type Algorithm,
  type Decision,
  fixedWindow,
  gcra,
  type LimitDefinition,
  Limiter,
  leakyBucketQueue,
  MemoryStore,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
} from '@sluice/core';
import { EPSILON, RateLimitHeaders, refusal } from '@sluice/core/adapter';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../packages/playground/src/page/defaults.js';
import { FACTORIES, nameOf } from '../../packages/playground/src/sim/config.js';
import { makeTrace, mulberry32, type TrafficSpec } from '../../packages/playground/src/sim/traffic.js';
import { ARTIFACTS, open, type Playground, settled, shownCounts, startPlayground } from './browser.js';

/** What the page publishes for tests (`window.sluicePlayground`, packages/playground/src/page/main.ts). */
declare const window: {
  sluicePlayground?: {
    runs: number;
    timing: { requests: number; traceMs: number; simulateMs: number; drawMs: number } | undefined;
  };
};

/** One request as a server sees it. */
interface Request {
  readonly time: number;
  readonly key: string;
  readonly cost: number;
}

/**
 * @sluice/core run in Node, as users run it: `Limiter.check` on a `MemoryStore`, request after
 * request. The page's counts must equal these.
 */
function runCore(limits: readonly LimitDefinition[], requests: readonly Request[], keep = true) {
  const limiter = new Limiter({ limits, store: new MemoryStore({ maxKeys: 1_000_000 }) });
  let admitted = 0;
  const refusedBy = limits.map(() => 0);
  const decisions: Decision[] = [];
  for (const r of requests) {
    const d = limiter.checkSync(r.key, { now: r.time, cost: r.cost }) as Decision;
    if (keep) decisions.push(d);
    if (d.allowed) admitted++;
    else
      d.limits.forEach((l, j) => {
        if (!l.allowed) refusedBy[j]!++;
      });
  }
  return { admitted, refused: requests.length - admitted, refusedBy, decisions, limiter };
}

/** Side by side: each limit on its own limiter. */
function sideBySide(limits: readonly LimitDefinition[], requests: readonly Request[], keep = true) {
  return limits.map((limit) => ({ lane: limit.name!, ...runCore([limit], requests, keep) }));
}

function requestsOf(traffic: readonly TrafficSpec[]): Request[] {
  const trace = makeTrace(traffic);
  return Array.from({ length: trace.length }, (_, i) => ({
    time: trace.times[i]!,
    key: trace.names[trace.keys[i]!]!,
    cost: trace.costs[i]!,
  }));
}

/** Most units admitted to one key in any window (t - window, t], counted the slow way. */
function busiest(requests: readonly Request[], decisions: readonly Decision[], window: number): number {
  let best = 0;
  requests.forEach((end, j) => {
    if (!decisions[j]!.allowed) return;
    let sum = 0;
    requests.forEach((r, i) => {
      if (
        decisions[i]!.allowed &&
        r.key === end.key &&
        r.time <= end.time &&
        r.time > end.time + EPSILON - window
      )
        sum += r.cost;
    });
    best = Math.max(best, sum);
  });
  return best;
}

async function runsFinished(page: Page): Promise<number> {
  return page.evaluate(() => window.sluicePlayground?.runs ?? 0);
}

let playground: Playground;

beforeAll(async () => {
  playground = await startPlayground();
}, 120_000);

afterAll(async () => {
  await playground?.close();
});

// The configuration written by hand, as someone would paste it in a chat.
const SIDE_QUERY =
  '#mode=side-by-side' +
  '&l=fixedWindow;limit=10;window=1s' +
  '&l=slidingWindowLog;name=log;limit=10;window=1s' +
  '&l=tokenBucket;capacity=10;refillInterval=1s;refill=stepped;strict=true' +
  '&l=leakyBucketQueue;rate=10;period=1s;queue=5' +
  '&t=boundary;window=1s;count=10;spread=100ms;repeat=2' +
  '&t=clients;clients=3;rate=6;abusive=30;duration=10s' +
  '&t=cost;rate=8;maxCost=4;start=2s;duration=5s;key=heavy' +
  '&headers=ietf';
const SIDE_LIMITS: LimitDefinition[] = [
  { name: 'fixedWindow', algorithm: fixedWindow({ limit: 10, window: '1s' }) },
  { name: 'log', algorithm: slidingWindowLog({ limit: 10, window: '1s' }) },
  {
    name: 'tokenBucket',
    algorithm: tokenBucket({ capacity: 10, refillInterval: '1s', refill: 'stepped', strict: true }),
  },
  { name: 'leakyBucketQueue', algorithm: leakyBucketQueue({ rate: 10, period: '1s', queue: 5 }) },
];
const SIDE_TRAFFIC: TrafficSpec[] = [
  { pattern: 'boundary', window: '1s', count: 10, spread: '100ms', repeat: 2 },
  { pattern: 'clients', clients: 3, rate: 6, abusive: 30, duration: '10s' },
  { pattern: 'cost', rate: 8, maxCost: 4, start: '2s', duration: '5s', key: 'heavy' },
];

describe('the playground in Chromium', () => {
  it('shows the counts @sluice/core gives in Node, side by side, for a configuration set in the URL', async () => {
    const page = await open(playground, SIDE_QUERY);
    expect(await settled(page)).toBe('done');
    const requests = requestsOf(SIDE_TRAFFIC);
    const expected = sideBySide(SIDE_LIMITS, requests);
    const shown = await shownCounts(page);
    expect(shown).toEqual(expected.map(({ lane, admitted, refused }) => ({ lane, admitted, refused })));
    // The traffic is one that tells the algorithms apart (else the comparison proves little).
    expect(new Set(expected.map((e) => e.admitted)).size).toBe(4);
    // The busiest window of each limit, against a count done the slow way.
    const busiestShown = await page.$$eval('#summary-body tr[data-lane]', (rows) =>
      rows.map((row) => Number(row.getAttribute('data-busiest'))),
    );
    expect(busiestShown).toEqual(
      expected.map((e, i) => busiest(requests, e.decisions, SIDE_LIMITS[i]!.algorithm.window)),
    );
    // The fixed window lets the boundary attack through twice over; the log never does.
    expect(busiestShown[0]).toBe(20);
    expect(busiestShown[1]).toBe(10);

    // The headers a client would see at a clicked point, against core's own formatting in Node.
    const chart = page.locator('.chart').first().locator('.u-over');
    const box = (await chart.boundingBox())!;
    await chart.click({ position: { x: box.width * 0.42, y: box.height / 2 } });
    await page.waitForSelector('#headers[data-index]');
    const index = Number(await page.getAttribute('#headers', 'data-index'));
    expect(index).toBeGreaterThan(0);
    const responses = await page.$$eval('#headers .response', (boxes) =>
      boxes.map((b) => ({ lane: b.getAttribute('data-lane'), text: b.querySelector('pre')!.textContent! })),
    );
    expect(responses.map((r) => r.lane)).toEqual(SIDE_LIMITS.map((l) => l.name));
    responses.forEach((response, i) => {
      const { limiter } = expected[i]!;
      const decision = runCore([SIDE_LIMITS[i]!], requests.slice(0, index + 1)).decisions[index]!;
      const headers: string[] = [];
      new RateLimitHeaders('ietf', limiter.limits).write(decision, headers, (list, name, value) => {
        list.push(`${name}: ${value}`);
      });
      const retryAfter = decision.allowed ? undefined : refusal(decision).retryAfter;
      if (retryAfter !== undefined) headers.push(`Retry-After: ${retryAfter}`);
      const lines = response.text.split('\n');
      expect(lines[0]).toBe(decision.allowed ? 'HTTP/1.1 200 OK' : 'HTTP/1.1 429 Too Many Requests');
      expect(lines.slice(1).filter((l: string) => !l.startsWith('Content-Type'))).toEqual(headers);
      expect(headers.join('\n')).toMatch(/^RateLimit-Policy: .+\nRateLimit: .+;r=\d+;t=\d+/);
    });
    await page.close();
  });

  it('opens on a default configuration that core agrees with (the screenshot of docs/playground.png)', async () => {
    const page = await open(playground, '');
    expect(await settled(page)).toBe('done');
    // The state is written into the URL at once, so even the default can be shared.
    expect(page.url()).toContain('#mode=side-by-side&l=');
    const limits: LimitDefinition[] = DEFAULT_CONFIG.limits.map((spec, i) => {
      const { algorithm, name: _, ...options } = spec;
      const factory = FACTORIES[algorithm] as (options: object) => Algorithm;
      return { name: nameOf(DEFAULT_CONFIG.limits, i), algorithm: factory(options) };
    });
    const expected = sideBySide(limits, requestsOf(DEFAULT_CONFIG.traffic), false);
    expect(await shownCounts(page)).toEqual(
      expected.map(({ lane, admitted, refused }) => ({ lane, admitted, refused })),
    );
    const chart = page.locator('.chart').first().locator('.u-over');
    const box = (await chart.boundingBox())!;
    await chart.click({ position: { x: box.width * 0.33, y: box.height / 2 } });
    await page.waitForSelector('#headers[data-index]');
    const shot = join(ARTIFACTS, 'playground.png');
    await page.screenshot({ path: shot, fullPage: true });
    expect(statSync(shot).size).toBeGreaterThan(20_000);
    await page.close();
  });

  it('runs layered limits on a pasted CSV trace (variable costs, several keys) as core does', async () => {
    const random = mulberry32(7);
    const requests: Request[] = [];
    let time = 0;
    for (let i = 0; i < 1500; i++) {
      time += Math.floor(random() * 40);
      requests.push({ time, key: `user-${Math.floor(random() * 4)}`, cost: 1 + Math.floor(random() * 3) });
    }
    const csv = `time,key,cost\n${requests.map((r) => `${r.time},${r.key},${r.cost}`).join('\n')}`;
    const query =
      '#mode=layered&l=gcra;name=burst;rate=20;period=1s;burst=5&l=slidingWindowCounter;name=minute;limit=300;window=1m;precision=6' +
      `&t=csv;text=${encodeURIComponent(csv)}&headers=draft-7`;
    const page = await open(playground, query);
    expect(await settled(page)).toBe('done');
    const limits: LimitDefinition[] = [
      { name: 'burst', algorithm: gcra({ rate: 20, period: '1s', burst: 5 }) },
      { name: 'minute', algorithm: slidingWindowCounter({ limit: 300, window: '1m', precision: 6 }) },
    ];
    const expected = runCore(limits, requests);
    expect(await shownCounts(page)).toEqual([
      { lane: 'burst + minute', admitted: expected.admitted, refused: expected.refused },
    ]);
    const refusedBy = await page.$$eval('#summary-body tr[data-limit]', (rows) =>
      rows.map((row) => [row.getAttribute('data-limit'), Number(row.getAttribute('data-refused-by'))]),
    );
    expect(refusedBy).toEqual([
      ['burst', expected.refusedBy[0]],
      ['minute', expected.refusedBy[1]],
    ]);
    // Both limits refuse some of it: the layered rule is exercised, not one limit alone.
    expect(expected.refusedBy.every((n) => n > 0)).toBe(true);
    await page.close();
  });

  it('keeps its state in the URL: an edit in the form rewrites the link, and the link reopens it', async () => {
    const page = await open(playground, SIDE_QUERY);
    const before = await runsFinished(page);
    await page.locator('[data-limit="0"] [data-option="limit"]').fill('5');
    await page.waitForFunction((n) => (window.sluicePlayground?.runs ?? 0) > n, before);
    expect(await settled(page)).toBe('done');
    const url = page.url();
    expect(url).toContain('l=fixedWindow;limit=5;window=1s');
    const edited = [
      { ...SIDE_LIMITS[0]!, algorithm: fixedWindow({ limit: 5, window: '1s' }) },
      ...SIDE_LIMITS.slice(1),
    ];
    const expected = sideBySide(edited, requestsOf(SIDE_TRAFFIC));
    const shown = await shownCounts(page);
    expect(shown).toEqual(expected.map(({ lane, admitted, refused }) => ({ lane, admitted, refused })));
    const reopened = await open(playground, url.slice(playground.url.length));
    expect(await shownCounts(reopened)).toEqual(shown);
    await Promise.all([page.close(), reopened.close()]);
  });

  it("reports a bad option with core's error code and the option's name", async () => {
    const page = await open(playground, '?l=tokenBucket;capacity=0;refillInterval=1s&t=steady;rate=5');
    expect(await settled(page)).toBe('error');
    const problem = await page.textContent('#problem');
    expect(problem).toContain('ERR_SLUICE_INVALID_OPTION');
    expect(problem).toContain('capacity');
    await page.close();
  });

  it("simulates and draws a 1,000,000-request trace in under 2 s of the page's CPU", async () => {
    const query =
      '#mode=side-by-side&l=tokenBucket;capacity=100;refillInterval=1s&l=slidingWindowCounter;limit=100;window=1s' +
      '&t=steady;rate=10000;duration=100s;clients=50';
    // The run is synchronous on the page's main thread, so on an idle machine its wall time is
    // its CPU time; on a loaded one (load 8 on 2 cores) the wall time grows with everything else
    // that runs, and said nothing about the page. The verdict reads the main thread's CPU time
    // (Chromium's ThreadTime) over the whole navigation: loading the page, making the traffic,
    // simulating and drawing, which is more than the 2 s claim covers, not less.
    const page = await open(playground, '');
    const cdp = await playground.context.newCDPSession(page);
    await cdp.send('Performance.enable', { timeDomain: 'threadTicks' });
    const cpu = async () =>
      (await cdp.send('Performance.getMetrics')).metrics.find((metric) => metric.name === 'ThreadTime')!
        .value;
    const before = await cpu();
    // Another query: a navigation in the same renderer (a change of `#` alone would reload it).
    await page.goto(`${playground.url}?million${query}`);
    expect(await settled(page)).toBe('done');
    const cpuMs = 1000 * ((await cpu()) - before);
    const timing = (await page.evaluate(() => window.sluicePlayground!.timing))!;
    writeFileSync(join(ARTIFACTS, 'million.json'), `${JSON.stringify({ ...timing, cpuMs }, null, 2)}\n`);
    console.log(
      `1,000,000 requests, 2 limits: traffic made in ${Math.round(timing.traceMs)} ms, simulated in ` +
        `${Math.round(timing.simulateMs)} ms, drawn in ${Math.round(timing.drawMs)} ms (wall); ` +
        `${Math.round(cpuMs)} ms of the main thread's CPU from navigation to drawn`,
    );
    expect(timing.requests).toBe(1_000_000);
    expect(cpuMs).toBeGreaterThan(0);
    expect(cpuMs).toBeLessThan(2000);
    const requests = requestsOf([{ pattern: 'steady', rate: 10000, duration: '100s', clients: 50 }]);
    const expected = sideBySide(
      [
        { name: 'tokenBucket', algorithm: tokenBucket({ capacity: 100, refillInterval: '1s' }) },
        { name: 'slidingWindowCounter', algorithm: slidingWindowCounter({ limit: 100, window: '1s' }) },
      ],
      requests,
      false,
    );
    expect(await shownCounts(page)).toEqual(
      expected.map(({ lane, admitted, refused }) => ({ lane, admitted, refused })),
    );
    await page.close();
  }, 60_000);
});

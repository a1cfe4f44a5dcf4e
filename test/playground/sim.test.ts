import {
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
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bucketize } from '../../packages/playground/src/sim/buckets.js';
import type { Lane, PlaygroundConfig } from '../../packages/playground/src/sim/config.js';
import { simulate } from '../../packages/playground/src/sim/simulate.js';
import { worstWindow } from '../../packages/playground/src/sim/summary.js';
import { parseCsv, type Trace, TraceBuilder, TraceError } from '../../packages/playground/src/sim/trace.js';
import { decodeState, encodeState } from '../../packages/playground/src/sim/url-state.js';

/** Random traces: a few keys, costs 1–4, times that repeat and jump (epoch-scale, as in production). */
const traces = fc
  .array(
    fc.record({
      gap: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 400 })),
      key: fc.integer({ min: 0, max: 2 }),
      cost: fc.integer({ min: 1, max: 4 }),
    }),
    {
      minLength: 1,
      maxLength: 300,
    },
  )
  .map((rows) => {
    const builder = new TraceBuilder();
    let time = 1_699_999_200_000;
    for (const row of rows) {
      time += row.gap;
      builder.push(time, builder.key(`k${row.key}`), row.cost);
    }
    return builder.build();
  });

/** Limiter.check on a MemoryStore, request after request: what users run. */
function viaLimiter(trace: Trace, limits: LimitDefinition[]): Decision[] {
  const limiter = new Limiter({ limits, store: new MemoryStore() });
  return Array.from(
    { length: trace.length },
    (_, i) =>
      limiter.checkSync(trace.names[trace.keys[i]!]!, {
        now: trace.times[i]!,
        cost: trace.costs[i]!,
      }) as Decision,
  );
}

const lane = (limits: LimitDefinition[]): Lane => ({
  name: limits.map((l) => l.name).join(' + '),
  limits: new Limiter({ limits }).limits,
});

const ALGORITHMS: LimitDefinition[] = [
  { name: 'continuous', algorithm: tokenBucket({ capacity: 5, refillInterval: '1s' }) },
  {
    name: 'strict',
    algorithm: tokenBucket({ capacity: 4, refillAmount: 2, refillInterval: 700, strict: true }),
  },
  {
    name: 'stepped',
    algorithm: tokenBucket({ capacity: 6, refillInterval: '1s', refill: 'stepped', strict: true }),
  },
  { name: 'gcra', algorithm: gcra({ rate: 7, period: '1s', burst: 3 }) },
  { name: 'fixed', algorithm: fixedWindow({ limit: 6, window: '1s' }) },
  { name: 'log', algorithm: slidingWindowLog({ limit: 6, window: 800 }) },
  { name: 'counter', algorithm: slidingWindowCounter({ limit: 8, window: '1s', precision: 3 }) },
  { name: 'queue', algorithm: leakyBucketQueue({ rate: 5, period: '1s', burst: 2, queue: 4 }) },
];

describe("the playground's simulation", () => {
  it('decides every request as Limiter.check on a MemoryStore does, alone and layered, for every algorithm', () => {
    fc.assert(
      fc.property(traces, fc.integer({ min: 0, max: ALGORITHMS.length - 1 }), (trace, pick) => {
        const layered = [
          ALGORITHMS[pick]!,
          ALGORITHMS[(pick + 3) % ALGORITHMS.length]!,
          ALGORITHMS[(pick + 5) % ALGORITHMS.length]!,
        ];
        const lanes = [...ALGORITHMS.map((l) => lane([l])), lane(layered)];
        const runs = simulate(trace, lanes);
        const expected = [...ALGORITHMS.map((l) => viaLimiter(trace, [l])), viaLimiter(trace, layered)];
        runs.forEach((run, r) => {
          const decisions = expected[r]!;
          const bits = (d: Decision) =>
            d.allowed ? 0 : d.limits.reduce((acc, l, j) => acc | (l.allowed ? 0 : 1 << j), 0);
          expect(Array.from(run.allowed)).toEqual(decisions.map((d) => (d.allowed ? 1 : 0)));
          expect(Array.from(run.remaining)).toEqual(decisions.map((d) => d.remaining));
          expect(Array.from(run.delay)).toEqual(decisions.map((d) => d.delay));
          expect(Array.from(run.refusedBy)).toEqual(decisions.map(bits));
          expect(run.admitted).toBe(decisions.filter((d) => d.allowed).length);
        });
      }),
      { numRuns: 60 },
    );
  });

  it('finds the busiest window of one key as a count over every window does', () => {
    fc.assert(
      fc.property(
        traces,
        fc.integer({ min: 1, max: 1500 }),
        fc.integer({ min: 0, max: 2 ** 30 }),
        (trace, window, seed) => {
          const allowed = Uint8Array.from(
            { length: trace.length },
            (_, i) => ((seed >> (i % 30)) & 1) | (i % 3 === 0 ? 1 : 0),
          );
          let best = 0;
          for (let j = 0; j < trace.length; j++) {
            if (!allowed[j]) continue;
            let sum = 0;
            for (let i = 0; i <= j; i++) {
              if (
                allowed[i] &&
                trace.keys[i] === trace.keys[j] &&
                trace.times[i]! > trace.times[j]! + 0.01 - window
              )
                sum += trace.costs[i]!;
            }
            best = Math.max(best, sum);
          }
          expect(worstWindow(trace, allowed, window, 1, 'x').units).toBe(best);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('puts every request in one bucket, and 1, 2 or 5 × 10^k ms wide', () => {
    fc.assert(
      fc.property(traces, fc.integer({ min: 1, max: 500 }), (trace, target) => {
        const [run] = simulate(trace, [lane([ALGORITHMS[0]!])]);
        const buckets = bucketize(trace, [run!], target);
        const sum = (values: ArrayLike<number>) => Array.from(values).reduce((a, b) => a + b, 0);
        expect(sum(buckets.offered)).toBe(trace.length);
        expect(sum(buckets.lanes[0]!.admitted)).toBe(run!.admitted);
        expect(sum(buckets.lanes[0]!.refused)).toBe(run!.refused);
        expect(String(buckets.width / 10 ** Math.floor(Math.log10(buckets.width)))).toMatch(
          /^(1|2|5)(\.0+)?$/,
        );
        expect(buckets.origin).toBeLessThanOrEqual(trace.times[0]!);
      }),
    );
  });

  it('reads CSV in any order (stably sorted), with an optional header, comments and the cost column optional', () => {
    const trace = parseCsv('# a trace\ntime,key,cost\n20,b,2\n10,a\n10,"x,y",3\n\n5,a,1\n').build();
    expect(Array.from(trace.times)).toEqual([5, 10, 10, 20]);
    expect(Array.from(trace.keys, (k) => trace.names[k])).toEqual(['a', 'a', '"x,y"', 'b']);
    expect(Array.from(trace.costs)).toEqual([1, 1, 3, 2]);
    expect(() => parseCsv('1,a,1\nsoon,a,1').build()).toThrow(
      new TraceError('time must be a finite number of ms; got "soon"', 2),
    );
    expect(() => parseCsv('1,a,1.5').build()).toThrow('line 1: cost must be an integer ≥ 1; got "1.5"');
    expect(() => parseCsv('1,,1').build()).toThrow('line 1: key must not be empty');
  });

  it('writes the state into a URL and reads the same configuration back', () => {
    const config: PlaygroundConfig = {
      mode: 'layered',
      limits: [
        { algorithm: 'tokenBucket', name: 'a;b=c&d#e %', capacity: 10, refillInterval: '1s', strict: true },
        { algorithm: 'slidingWindowCounter', limit: 100, window: 60_000, precision: 6 },
      ],
      traffic: [
        { pattern: 'steady', rate: 12.5, duration: '10s', key: 'user 1' },
        { pattern: 'csv', text: 'time,key,cost\n0,a,1\n5,b;c,2\n' },
      ],
      headers: 'draft-6',
    };
    const text = encodeState(config);
    expect(text).toContain(
      'l=tokenBucket;name=a%253Bb%253Dc%2526d%2523e%20%2525;capacity=10;refillInterval=1s;strict=true',
    );
    expect(decodeState(`#${text}`, { ...config, limits: [], traffic: [] })).toEqual(config);
    expect(decodeState(`?${text}`, { ...config, limits: [], traffic: [] })).toEqual(config);
  });
});

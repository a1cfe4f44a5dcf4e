/**
 * The adaptive concurrency simulator: a service of capacity C (W workers, lognormal service
 * times) behind each controller, on virtual time with a seeded generator, so a seed always gives
 * the same run. Netflix's test shape: offered load steps through 50%, 90%, 200% and 100% of C,
 * then the service slows to half its capacity under the same load. Pure: no clock, no I/O; the
 * playground's page and `pnpm simulate adaptive` both run it.
 */
import {
  AdaptiveConcurrency,
  aimd,
  type ControllerKind,
  envoyGradient,
  gradient2,
  type LimitController,
  vegas,
} from '@sluice/core';
import { EventQueue } from './event-queue.js';
import { exponential, lognormal, seededRandom } from './rng.js';

/** A lane: one controller, or none (the service unprotected). */
export type LaneKind = ControllerKind | 'none';
export const LANE_KINDS: readonly LaneKind[] = ['none', 'vegas', 'gradient2', 'aimd', 'envoy-gradient'];

/** One stretch of the run: offered load as a share of the original capacity, and the service's speed. */
export interface Phase {
  /** ms. */
  readonly duration: number;
  /** Offered load ÷ the service's original capacity. */
  readonly load: number;
  /** Capacity ÷ the original (0.5: each request takes twice as long). */
  readonly speed: number;
}

export interface AdaptiveSimConfig {
  readonly seed: number;
  /** Workers serving at once; beyond them requests queue. */
  readonly workers: number;
  /** Mean service time at full speed, ms. Capacity C = workers ÷ serviceTime. */
  readonly serviceTime: number;
  /** Log-space standard deviation of the lognormal service times. */
  readonly sigma: number;
  /** The client gives up after this long (ms): the request is a drop, its queued work cancelled. */
  readonly timeout: number;
  readonly phases: readonly Phase[];
  /** Width of a plotted bucket, ms. */
  readonly bucket: number;
  readonly lanes: readonly LaneKind[];
}

/** Netflix's shape, 10 s per step, then 20 s at half capacity: C = 40 ÷ 50 ms = 800 requests/s. */
export const DEFAULT_SIM: AdaptiveSimConfig = {
  seed: 1,
  workers: 40,
  serviceTime: 50,
  sigma: 0.4,
  timeout: 1000,
  phases: [
    { duration: 10_000, load: 0.5, speed: 1 },
    { duration: 10_000, load: 0.9, speed: 1 },
    { duration: 10_000, load: 2, speed: 1 },
    { duration: 10_000, load: 1, speed: 1 },
    { duration: 20_000, load: 1, speed: 0.5 },
  ],
  bucket: 250,
  lanes: LANE_KINDS,
};

/** One lane's series, one value per bucket (`NaN` where a bucket had nothing to measure). */
export interface LaneSeries {
  readonly kind: LaneKind;
  /** The limit at the bucket's end (`NaN` without a limiter). */
  readonly limit: number[];
  /** Requests admitted and not yet ended, at the bucket's end. */
  readonly inFlight: number[];
  /** Mean latency of the requests served in the bucket, ms. */
  readonly latency: number[];
  /** Requests served within the timeout, per second. */
  readonly goodput: number[];
  /** Requests refused by the limiter or timed out, per second. */
  readonly drops: number[];
  /** Admissions that found in flight at or above the limit (must be 0). */
  readonly overLimit: number;
  readonly totals: { readonly served: number; readonly refused: number; readonly timedOut: number };
}

export interface AdaptiveSimResult {
  readonly config: AdaptiveSimConfig;
  /** Each bucket's end, ms. */
  readonly times: number[];
  /** Where each phase starts, ms. */
  readonly phaseStarts: number[];
  readonly lanes: LaneSeries[];
}

const CONTROLLERS: Record<ControllerKind, () => LimitController> = {
  vegas: () => vegas(),
  gradient2: () => gradient2(),
  aimd: () => aimd(),
  'envoy-gradient': () => envoyGradient(),
};

/** The arrivals and each request's own service-time draw: the same for every lane. */
interface Workload {
  readonly arrivals: Float64Array;
  /** Service time at full speed, ms. */
  readonly work: Float64Array;
}

function workload(config: AdaptiveSimConfig): Workload {
  const random = seededRandom(config.seed);
  const capacity = config.workers / config.serviceTime; // requests per ms
  const arrivals: number[] = [];
  const work: number[] = [];
  let start = 0;
  for (const phase of config.phases) {
    const end = start + phase.duration;
    const gap = 1 / (capacity * phase.load);
    for (let t = start + exponential(random, gap); t < end; t += exponential(random, gap)) {
      arrivals.push(t);
      work.push(lognormal(random, config.serviceTime, config.sigma));
    }
    start = end;
  }
  return { arrivals: Float64Array.from(arrivals), work: Float64Array.from(work) };
}

function speedAt(config: AdaptiveSimConfig, at: number): number {
  let start = 0;
  for (const phase of config.phases) {
    if (at < start + phase.duration) return phase.speed;
    start += phase.duration;
  }
  return config.phases[config.phases.length - 1]!.speed;
}

type Event = { type: 'arrive'; i: number } | { type: 'done'; i: number } | { type: 'timeout'; i: number };

/** A request's state in a lane (`Abandoned`: its client left while it was being served). */
enum State {
  Arriving,
  Abandoned,
  Queued,
  Serving,
  Ended,
}

function runLane(kind: LaneKind, config: AdaptiveSimConfig, load: Workload, total: number): LaneSeries {
  let now = 0;
  const limiter =
    kind === 'none'
      ? undefined
      : new AdaptiveConcurrency({
          controller: CONTROLLERS[kind](),
          clock: () => now,
          random: seededRandom(config.seed * 7919 + 17),
          ttl: config.timeout * 10,
        });
  const n = load.arrivals.length;
  const state = new Uint8Array(n);
  const started = new Float64Array(n);
  const leases: ({ release(outcome?: { now?: number; dropped?: boolean }): boolean } | undefined)[] =
    new Array(n);
  const queue: number[] = [];
  let head = 0;
  let busy = 0;
  let admitted = 0;
  let overLimit = 0;
  const events = new EventQueue<Event>();
  for (let i = 0; i < n; i++) events.push(load.arrivals[i]!, { type: 'arrive', i });

  const buckets = Math.ceil(total / config.bucket);
  const series = {
    limit: new Array<number>(buckets).fill(Number.NaN),
    inFlight: new Array<number>(buckets).fill(0),
    latencySum: new Array<number>(buckets).fill(0),
    served: new Array<number>(buckets).fill(0),
    drops: new Array<number>(buckets).fill(0),
  };
  const totals = { served: 0, refused: 0, timedOut: 0 };
  let bucket = 0;
  const closeBucketsUntil = (at: number) => {
    while (bucket < buckets && (bucket + 1) * config.bucket <= at) {
      series.limit[bucket] = limiter?.limit ?? Number.NaN;
      series.inFlight[bucket] = admitted;
      bucket++;
    }
  };
  const bucketOf = (at: number) => Math.min(buckets - 1, Math.floor(at / config.bucket));
  const serve = (i: number) => {
    state[i] = State.Serving;
    busy++;
    started[i] = now;
    events.push(now + load.work[i]! / speedAt(config, now), { type: 'done', i });
  };

  for (let next = events.pop(); next !== undefined; next = events.pop()) {
    closeBucketsUntil(next.at);
    now = next.at;
    const { type, i } = next.event;
    if (type === 'arrive') {
      if (limiter !== undefined) {
        const full = limiter.inFlight >= limiter.limit;
        const lease = limiter.acquire();
        if (!lease.decision.allowed) {
          totals.refused++;
          series.drops[bucketOf(now)]!++;
          state[i] = State.Ended;
          continue;
        }
        if (full) overLimit++;
        leases[i] = lease;
      }
      admitted++;
      events.push(now + config.timeout, { type: 'timeout', i });
      if (busy < config.workers) serve(i);
      else {
        state[i] = State.Queued;
        queue.push(i);
      }
    } else if (type === 'done') {
      busy--;
      if (state[i] === State.Serving) {
        state[i] = State.Ended;
        admitted--;
        leases[i]?.release({ now });
        totals.served++;
        const b = bucketOf(now);
        series.served[b]!++;
        series.latencySum[b]! += now - load.arrivals[i]!;
      }
      // The next queued request still waited for; those whose client left are cancelled.
      while (head < queue.length && busy < config.workers) {
        const j = queue[head++]!;
        if (state[j] === State.Queued) serve(j);
      }
    } else if (state[i] === State.Queued || state[i] === State.Serving) {
      // The client gave up: a drop. Queued work is cancelled; work already started runs on.
      const serving = state[i] === State.Serving;
      state[i] = serving ? State.Abandoned : State.Ended;
      admitted--;
      leases[i]?.release({ now, dropped: true });
      totals.timedOut++;
      series.drops[bucketOf(now)]!++;
    }
    if (head > 4096 && head * 2 > queue.length) {
      queue.splice(0, head);
      head = 0;
    }
  }
  closeBucketsUntil(Number.POSITIVE_INFINITY);
  const perSecond = 1000 / config.bucket;
  return {
    kind,
    limit: series.limit,
    inFlight: series.inFlight,
    latency: series.latencySum.map((sum, b) =>
      series.served[b] === 0 ? Number.NaN : sum / series.served[b]!,
    ),
    goodput: series.served.map((count) => count * perSecond),
    drops: series.drops.map((count) => count * perSecond),
    overLimit,
    totals,
  };
}

/** Runs every lane of `config` on the same arrivals and service times. */
export function simulateAdaptive(config: AdaptiveSimConfig = DEFAULT_SIM): AdaptiveSimResult {
  const load = workload(config);
  const total = config.phases.reduce((sum, p) => sum + p.duration, 0);
  const times: number[] = [];
  for (let t = config.bucket; t <= Math.ceil(total / config.bucket) * config.bucket; t += config.bucket)
    times.push(t);
  const phaseStarts: number[] = [];
  let start = 0;
  for (const phase of config.phases) {
    phaseStarts.push(start);
    start += phase.duration;
  }
  return {
    config,
    times,
    phaseStarts,
    lanes: config.lanes.map((kind) => runLane(kind, config, load, total)),
  };
}

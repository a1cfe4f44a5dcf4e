/**
 * The HTTP bench's shape (`bench/src/adaptive/`) in virtual time: a downstream of `slots` calls at
 * once, each `serviceTime` ms (a fixed pool: the rest queue), offered open-loop load at a multiple
 * of its capacity, every `criticalEvery`-th request critical and the rest low, each adaptive
 * controller guarding it with the bench's partitions, beside no limiter and fixed limits. Pure
 * and seeded, so its figures are deterministic (the bench's are not: they depend on the machine).
 *
 * Also the bench's settling run: 1.5× capacity, the downstream halving its capacity half way.
 *
 * One difference: the bench warms each app up for 5 s at 90% of capacity before an overload round
 * (a running service meeting a spike); these rounds start cold, so they also show each
 * controller's start (Envoy's gradient first measures its minRTT at concurrency 3).
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

/** A subject, as the bench names them: no limiter, a fixed limit (tuned right, or 4× too high), a controller. */
export type ShapeSubject = 'none' | 'fixed' | 'fixed-4x' | ControllerKind;
export const SHAPE_SUBJECTS: readonly ShapeSubject[] = [
  'none',
  'fixed',
  'fixed-4x',
  'vegas',
  'gradient2',
  'aimd',
  'envoy-gradient',
];

export interface BenchShape {
  readonly seed: number;
  /** The downstream's concurrency. */
  readonly slots: number;
  /** ms per downstream call at full speed. */
  readonly serviceTime: number;
  /** Log-space standard deviation of service times; 0: every call takes `serviceTime` (the bench). */
  readonly sigma: number;
  /** `even`: request i arrives at i ÷ rate (the bench's open loop); `poisson`: exponential gaps. */
  readonly arrivals: 'even' | 'poisson';
  /** Every n-th request is critical (the bench: 7, ~14%; see its `CRITICAL_EVERY`). */
  readonly criticalEvery: number;
  /** The adaptive subjects' partitions (the bench's). */
  readonly partitions: Readonly<Record<'critical' | 'low', number>>;
  /** The client gives up after this long (ms): a failure, its queued work cancelled. */
  readonly timeout: number;
  /** ms of each round. */
  readonly duration: number;
  /** The app's event loop, when it is busy (see `BusyLoop`); none: the app answers at once (the default). */
  readonly loop?: BusyLoop;
}

/**
 * An app whose one core is busy (the bench's Express app at 4×: 1,600 requests a second): its
 * event loop turns every `turn` ms, and one turn in `stallEvery` takes `stall` × 0.5–1.5 ms
 * instead (a seeded draw). Arrivals are seen at the end of the turn they came in; a downstream
 * call that ends frees its downstream slot then, but its response's end (the lease's release) is
 * seen a turn later, after that turn's arrivals: so requests come in bursts and meet slots still
 * held.
 */
export interface BusyLoop {
  /** ms of an ordinary turn. */
  readonly turn: number;
  /** ms of a stalled turn, on average. */
  readonly stall: number;
  /** One turn in this many stalls, on average. */
  readonly stallEvery: number;
}

/** The bench's: 20 slots × 50 ms (400/s), 1 in 7 critical, partitions 80/20, 10 s client timeout. */
export const BENCH_SHAPE: BenchShape = {
  seed: 1,
  slots: 20,
  serviceTime: 50,
  sigma: 0,
  arrivals: 'even',
  criticalEvery: 7,
  partitions: { critical: 0.8, low: 0.2 },
  timeout: 10_000,
  duration: 20_000,
};

/**
 * A model of the bench's Express app at 4× (2 ms turns, a 10–30 ms stall one turn in 50): a
 * guess at its loop, not a measurement of it. With one slot of partition headroom it reproduced
 * the bench's Express rows in direction and size: critical 98.6–99.0% served at 4× (the bench:
 * 98.8–98.9%), low priority and goodput below the quiet loop's (bench/results/adaptive.md).
 */
export const BUSY_LOOP: BusyLoop = { turn: 2, stall: 20, stallEvery: 50 };

const CONTROLLERS: Record<ControllerKind, () => LimitController> = {
  vegas: () => vegas(),
  gradient2: () => gradient2(),
  aimd: () => aimd(),
  'envoy-gradient': () => envoyGradient(),
};

/** One round of one subject. */
export interface ShapeRound {
  readonly subject: ShapeSubject;
  /** Offered load ÷ capacity. */
  readonly load: number;
  /** Successful answers per second (late ones included, as the bench counts). */
  readonly goodput: number;
  /** Answers per second within `deadline` of arrival. */
  readonly goodputInDeadline: number;
  /** ms: 2 × the no-load p99. */
  readonly deadline: number;
  /** p99 latency of the served, ms. */
  readonly p99: number;
  readonly criticalServed: number;
  readonly lowServed: number;
  /** The limit every 100 ms (empty for subjects without an adaptive limit). */
  readonly limits: number[];
  /** Admissions that found in flight at or above the limit (must be 0). */
  readonly overLimit: number;
}

type Event =
  | { type: 'arrive'; i: number }
  | { type: 'done'; i: number }
  | { type: 'finish'; i: number }
  | { type: 'timeout'; i: number };

const QUEUED = 1;
const SERVING = 2;
const ENDED = 3;
/** The downstream call ended; the response's end is not yet seen (a busy loop). */
const FINISHING = 5;

/** The loop's turns: when each ends, in ms, up to past `until`; none without a loop. */
function loopTurns(loop: BusyLoop | undefined, seed: number, until: number): number[] {
  if (loop === undefined) return [];
  const random = seededRandom(seed * 31 + 5);
  const turns = [0];
  for (let t = 0; t <= until; turns.push(t)) {
    t += random() < 1 / loop.stallEvery ? loop.stall * (0.5 + random()) : loop.turn;
  }
  return turns;
}

/** The first turn's end at or after `t` (`after`: strictly after); `t` itself without a loop. */
function turnAt(turns: readonly number[], t: number, after = false): number {
  if (turns.length === 0) return t;
  let lo = 0;
  let hi = turns.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (after ? turns[mid]! > t : turns[mid]! >= t) hi = mid;
    else lo = mid + 1;
  }
  return turns[lo]!;
}

/**
 * One round: `load` × capacity for `shape.duration`; `halveAt` (ms), when given, doubles the
 * service time from then on; `controller`, when given, replaces the subject's defaults. `deadline`: answers later than it are not counted in `goodputInDeadline`.
 */
export function runShape(
  subject: ShapeSubject,
  load: number,
  shape: BenchShape,
  options: { deadline: number; halveAt?: number; controller?: () => LimitController },
): ShapeRound {
  const random = seededRandom(shape.seed);
  const rate = (shape.slots / shape.serviceTime) * load; // per ms
  const arrivals: number[] = [];
  const work: number[] = [];
  for (
    let t = shape.arrivals === 'even' ? 0 : exponential(random, 1 / rate), i = 0;
    t < shape.duration;
    i++, t = shape.arrivals === 'even' ? i / rate : t + exponential(random, 1 / rate)
  ) {
    arrivals.push(t);
    work.push(shape.sigma === 0 ? shape.serviceTime : lognormal(random, shape.serviceTime, shape.sigma));
  }
  let now = 0;
  const adaptive =
    subject in CONTROLLERS
      ? new AdaptiveConcurrency({
          controller: (options.controller ?? CONTROLLERS[subject as ControllerKind])(),
          partitions: shape.partitions,
          clock: () => now,
          random: seededRandom(shape.seed * 7919 + 17),
        })
      : undefined;
  const fixed = subject === 'fixed' ? shape.slots : subject === 'fixed-4x' ? shape.slots * 4 : undefined;
  const n = arrivals.length;
  const state = new Uint8Array(n);
  const leases: ({ release(outcome: { now: number; dropped?: boolean }): boolean } | undefined)[] = new Array(
    n,
  );
  const queue: number[] = [];
  let head = 0;
  let busy = 0;
  let inFlight = 0;
  let overLimit = 0;
  const served = { critical: 0, low: 0 };
  const sent = { critical: 0, low: 0 };
  let inDeadline = 0;
  const latencies: number[] = [];
  const limits: number[] = [];
  const events = new EventQueue<Event>();
  // Past the last call's end and its client's timeout, so every event has a turn to be seen at.
  const turns = loopTurns(shape.loop, shape.seed, shape.duration + shape.timeout + 10 * shape.serviceTime);
  for (let i = 0; i < n; i++) events.push(turnAt(turns, arrivals[i]!), { type: 'arrive', i });
  const speed = () => (options.halveAt !== undefined && now >= options.halveAt ? 0.5 : 1);
  const serve = (i: number) => {
    state[i] = SERVING;
    busy++;
    events.push(turnAt(turns, now + work[i]! / speed()), { type: 'done', i });
  };
  const critical = (i: number) => i % shape.criticalEvery === 0;

  for (let next = events.pop(); next !== undefined; next = events.pop()) {
    while (
      adaptive !== undefined &&
      (limits.length + 1) * 100 <= next.at &&
      (limits.length + 1) * 100 <= shape.duration
    )
      limits.push(adaptive.limit);
    now = next.at;
    const { type, i } = next.event;
    if (type === 'arrive') {
      sent[critical(i) ? 'critical' : 'low']++;
      if (adaptive !== undefined) {
        const full = adaptive.inFlight >= adaptive.limit;
        const lease = adaptive.acquire(critical(i) ? 'critical' : 'low');
        if (!lease.decision.allowed) {
          state[i] = ENDED;
          continue;
        }
        if (full) overLimit++;
        leases[i] = lease;
      } else if (fixed !== undefined && inFlight >= fixed) {
        state[i] = ENDED;
        continue;
      }
      inFlight++;
      events.push(now + shape.timeout, { type: 'timeout', i });
      if (busy < shape.slots) serve(i);
      else {
        state[i] = QUEUED;
        queue.push(i);
      }
    } else if (type === 'done' && turns.length > 0) {
      busy--;
      if (state[i] === SERVING) {
        state[i] = FINISHING;
        events.push(turnAt(turns, now, true), { type: 'finish', i });
      }
      while (head < queue.length && busy < shape.slots) {
        const j = queue[head++]!;
        if (state[j] === QUEUED) serve(j);
      }
    } else if (type === 'done' || type === 'finish') {
      if (type === 'done') busy--;
      if (state[i] === SERVING || state[i] === FINISHING) {
        state[i] = ENDED;
        inFlight--;
        leases[i]?.release({ now });
        served[critical(i) ? 'critical' : 'low']++;
        const latency = now - arrivals[i]!;
        latencies.push(latency);
        if (latency <= options.deadline) inDeadline++;
      }
      while (head < queue.length && busy < shape.slots) {
        const j = queue[head++]!;
        if (state[j] === QUEUED) serve(j);
      }
    } else if (state[i] === QUEUED || state[i] === SERVING || state[i] === FINISHING) {
      // The client gave up: queued work is cancelled, started work runs on (its slot stays busy).
      state[i] = state[i] === SERVING ? ENDED + 1 : ENDED;
      inFlight--;
      leases[i]?.release({ now, dropped: true });
    }
  }
  latencies.sort((a, b) => a - b);
  const seconds = shape.duration / 1000;
  return {
    subject,
    load,
    goodput: (served.critical + served.low) / seconds,
    goodputInDeadline: inDeadline / seconds,
    deadline: options.deadline,
    p99: latencies.length === 0 ? Number.NaN : latencies[Math.ceil(0.99 * latencies.length) - 1]!,
    criticalServed: served.critical / Math.max(1, sent.critical),
    lowServed: served.low / Math.max(1, sent.low),
    limits,
    overLimit,
  };
}

/** The deadline for "goodput within a deadline": 2 × the p99 at 10% load with no limiter. */
export function shapeDeadline(shape: BenchShape): number {
  return 2 * runShape('none', 0.1, shape, { deadline: Number.POSITIVE_INFINITY }).p99;
}

/** How a limit settled after the halving (the bench's reading of its 100 ms samples). */
export interface LimitRecovery {
  /** s after the halving until the limit stays within ±20% of where it settles. */
  readonly after: number;
  /** The median of the last third after the halving. */
  readonly steadyAt: number;
  /** The largest distance from `steadyAt` over that last third, as a share. */
  readonly swing: number;
}

export function limitRecovery(limits: readonly number[], halvedAt: number): LimitRecovery {
  const since = limits.slice(halvedAt);
  const tail = since.slice(Math.floor((since.length * 2) / 3)).sort((a, b) => a - b);
  const steadyAt = tail[Math.floor(tail.length / 2)] ?? Number.NaN;
  let last = -1;
  since.forEach((limit, i) => {
    if (Math.abs(limit - steadyAt) > 0.2 * steadyAt) last = i;
  });
  const swing = Math.max(...tail.map((limit) => Math.abs(limit - steadyAt) / steadyAt));
  return { after: ((last + 1) * 100) / 1000, steadyAt, swing };
}

/** The bench's settling run: 1.5× for `seconds`, the downstream halving half way. */
export function halvingShape(
  subject: ControllerKind,
  shape: BenchShape,
  seconds = 40,
): LimitRecovery & { readonly limits: number[] } {
  const duration = seconds * 1000;
  const round = runShape(
    subject,
    1.5,
    { ...shape, duration },
    { deadline: Number.POSITIVE_INFINITY, halveAt: duration / 2 },
  );
  return { ...limitRecovery(round.limits, duration / 200), limits: round.limits };
}

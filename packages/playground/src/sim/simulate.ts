import { type Decision, Limiter, MemoryStore } from '@sluice/core';
import { batchStep, combine, UNCHANGED } from '@sluice/core/adapter';
import type { Lane } from './config.js';
import type { Trace } from './trace.js';

/** What one lane decided for every request of a trace, column by column. */
export interface LaneRun {
  readonly lane: Lane;
  /** 1 when the request was admitted (possibly after `delay`). */
  readonly allowed: Uint8Array;
  /** The decision's `remaining` (the limit with the fewest units left). */
  readonly remaining: Float64Array;
  /** The decision's `delay`, ms (leaky bucket queue). */
  readonly delay: Float64Array;
  /** Bit j set when the lane's limit j refused the request (several bits in a layered lane). */
  readonly refusedBy: Uint8Array;
  readonly admitted: number;
  readonly refused: number;
  readonly admittedUnits: number;
  readonly refusedUnits: number;
  /** Refusals whose cost is above what a limit can ever admit (`cost-exceeds-limit`). */
  readonly neverAdmissible: number;
  /** Requests refused by each limit of the lane. */
  readonly refusedByLimit: readonly number[];
}

/**
 * Runs every request of the trace through each lane, in time order, with @sluice/core's pure
 * algorithms: the single-limit step is `algorithm.consume(state, now, cost, policy)` and the
 * layered step is core's own all-or-nothing rule (`batchStep`), exactly what `MemoryStore`
 * does for `Limiter.check`, without its eviction (every key stays: a trace holds as many keys as
 * it needs) and without one Map lookup and one promise-free wrapper per request: states live in
 * an array indexed by the trace's key numbers. The browser test checks the counts against
 * `Limiter` on a `MemoryStore` run in Node.
 */
export function simulate(trace: Trace, lanes: readonly Lane[]): LaneRun[] {
  return lanes.map((lane) => (lane.limits.length === 1 ? single(trace, lane) : layered(trace, lane)));
}

type Columns = Pick<LaneRun, 'allowed' | 'remaining' | 'delay' | 'refusedBy'>;

function columns(trace: Trace): Columns {
  return {
    allowed: new Uint8Array(trace.length),
    remaining: new Float64Array(trace.length),
    delay: new Float64Array(trace.length),
    refusedBy: new Uint8Array(trace.length),
  };
}

interface Counts {
  admitted: number;
  admittedUnits: number;
  refusedUnits: number;
  never: number;
}

const newCounts = (): Counts => ({ admitted: 0, admittedUnits: 0, refusedUnits: 0, never: 0 });

/** A lane's run from its columns and the counts its loop kept. */
function runOf(
  trace: Trace,
  lane: Lane,
  cols: Columns,
  counts: Counts,
  refusedByLimit: readonly number[],
): LaneRun {
  const { admitted, admittedUnits, refusedUnits, never } = counts;
  return {
    lane,
    ...cols,
    admitted,
    refused: trace.length - admitted,
    admittedUnits,
    refusedUnits,
    neverAdmissible: never,
    refusedByLimit,
  };
}

function single(trace: Trace, lane: Lane): LaneRun {
  const { algorithm, name } = lane.limits[0]!;
  const { times, keys, costs } = trace;
  const cols = columns(trace);
  const { allowed, remaining, delay, refusedBy } = cols;
  const states = new Array<unknown>(trace.names.length);
  const counts = newCounts();
  for (let i = 0; i < trace.length; i++) {
    const k = keys[i]!;
    const step = algorithm.consume(states[k], times[i]!, costs[i]!, name);
    states[k] = step.state;
    const d = step.decision;
    remaining[i] = d.remaining;
    delay[i] = d.delay;
    if (d.allowed) {
      allowed[i] = 1;
      counts.admitted++;
      counts.admittedUnits += costs[i]!;
    } else {
      refusedBy[i] = 1;
      counts.refusedUnits += costs[i]!;
      if (d.reason === 'cost-exceeds-limit') counts.never++;
    }
  }
  return runOf(trace, lane, cols, counts, [trace.length - counts.admitted]);
}

function layered(trace: Trace, lane: Lane): LaneRun {
  const { times, keys, costs, names } = trace;
  const cols = columns(trace);
  const { allowed, remaining, delay, refusedBy } = cols;
  const m = lane.limits.length;
  const stored = lane.limits.map(() => new Array<unknown>(names.length));
  // One call per limit, rewritten per request: batchStep reads them and keeps none.
  const calls = lane.limits.map((l) => ({ algorithm: l.algorithm, key: '', cost: 1, policy: l.name }));
  const states = new Array<unknown>(m);
  const refusedByLimit = new Array<number>(m).fill(0);
  const counts = newCounts();
  for (let i = 0; i < trace.length; i++) {
    const k = keys[i]!;
    const key = names[k]!;
    const cost = costs[i]!;
    for (let j = 0; j < m; j++) {
      const call = calls[j]!;
      call.key = key;
      call.cost = cost;
      states[j] = stored[j]![k];
    }
    const { decisions, writes } = batchStep(calls, states, times[i]!);
    for (let j = 0; j < m; j++) {
      const write = writes[j];
      if (write !== UNCHANGED) stored[j]![k] = write;
    }
    const d = combine(decisions);
    remaining[i] = d.remaining;
    delay[i] = d.delay;
    if (d.allowed) {
      allowed[i] = 1;
      counts.admitted++;
      counts.admittedUnits += cost;
    } else {
      let bits = 0;
      for (let j = 0; j < m; j++) {
        if (!decisions[j]!.allowed) {
          bits |= 1 << j;
          refusedByLimit[j]!++;
        }
      }
      refusedBy[i] = bits;
      counts.refusedUnits += cost;
      if (d.reason === 'cost-exceeds-limit') counts.never++;
    }
  }
  return runOf(trace, lane, cols, counts, refusedByLimit);
}

/**
 * The decision a server would have made for request `index`, by `Limiter.check` on a fresh
 * `MemoryStore`, replaying the earlier requests of the same key (other keys never change it):
 * the full `Decision`, with every layered limit's own, for the headers shown at a clicked point.
 */
export function decisionAt(trace: Trace, lane: Lane, index: number): Decision {
  const limiter = new Limiter({
    limits: lane.limits.map((l) => ({ name: l.name, algorithm: l.algorithm })),
    store: new MemoryStore({ maxKeys: 1 }),
  });
  const k = trace.keys[index]!;
  const key = trace.names[k]!;
  let decision: Decision | undefined;
  for (let i = 0; i <= index; i++) {
    if (trace.keys[i] !== k) continue;
    decision = limiter.checkSync(key, { now: trace.times[i]!, cost: trace.costs[i]! }) as Decision;
  }
  return decision!;
}

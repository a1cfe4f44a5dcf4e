/** The subjects compared, each on Fastify and on Express (under-pressure is Fastify's only). */
export const SUBJECTS = [
  'none',
  'fixed',
  'fixed-4x',
  'under-pressure',
  'vegas',
  'gradient2',
  'aimd',
  'envoy-gradient',
] as const;
export type SubjectId = (typeof SUBJECTS)[number];
export type Framework = 'fastify' | 'express';

/**
 * The downstream: 20 calls at once, 50 ms each: 400 requests per second. Low enough that 4× it
 * (1,600 a second, refusals included) leaves the app's core idle part of the time: the bottleneck
 * must be the downstream, not the app's CPU (a smoke run on a loaded machine at 1,000 a second was
 * CPU-bound, and refusals then took the CPU that served requests needed).
 */
export const SLOTS = 20;
export const SERVICE_MS = 50;

/** The priority header the load sets and the apps read. */
export const PRIORITY_HEADER = 'x-priority';
/**
 * Every 7th request is critical (1 in 7, ~14%), the rest low. Issue 33's target, critical ≥ 99%
 * served while low priority absorbs the shedding, presumes critical's own demand fits what the
 * partitions guarantee it (Netflix's account: user-initiated requests a minority, prefetch the
 * bulk). At 4× this mix offers critical 0.57× the downstream's capacity, inside its 80% share;
 * at 2× low alone offers 1.71×, so there is still shedding to do. The first mix, a quarter
 * critical (until 2026-11-27, bench/results/adaptive.md's history), offered critical the whole
 * capacity at 4×: no limiter could serve 99% of it without starving low priority below its
 * guaranteed 20%.
 */
export const CRITICAL_EVERY = 7;
/** The adaptive subjects' partitions: critical traffic keeps 80% of the limit while it asks. */
export const PARTITIONS = { critical: 0.8, low: 0.2 } as const;

export function subjectsOf(framework: Framework): readonly SubjectId[] {
  return SUBJECTS.filter((s) => framework === 'fastify' || s !== 'under-pressure');
}

/** What the app process sends back over IPC. */
export type FromApp =
  | { type: 'ready'; port: number }
  | {
      type: 'stats';
      /** ms: latency of 2xx responses, arrival to finish, measured in the app. */
      p99: number;
      served: number;
      /** The adaptive limit sampled every 100 ms since the last `stats` (empty for other subjects). */
      limits: number[];
    };
export type ToApp = 'stats' | 'halve' | 'stop';

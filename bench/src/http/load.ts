import autocannon from 'autocannon';
import { median } from '../lib/stats.js';
import type { ServerProcess } from './server-process.js';
import { CLIENT_HEADER, CLIENTS, ROUTE, type Shape } from './subjects.js';

/** Concurrent keep-alive connections, one request in flight on each (no pipelining). */
export const CONNECTIONS = 50;
export const PIPELINING = 1;

/** One measured round against one server. */
export interface Round {
  /** 2xx responses per second. */
  readonly rps: number;
  /** Latency of 2xx responses, ms, as autocannon reports it (whole ms). */
  readonly p99: number;
  readonly mean: number;
  /** Responses that were not 2xx, plus socket errors and timeouts: must be 0. */
  readonly failures: number;
  /** CPU used by the server process / by the load generator, as a fraction of one core. */
  readonly serverCpu: number;
  readonly loadCpu: number;
  /**
   * Server CPU time per 2xx response, µs: what the app costs per request whoever wins the race
   * for the cores (on a busy 2-core machine throughput also depends on the load generator).
   */
  readonly cpuPerRequest: number;
  /** redis-server CPU time per 2xx response, µs (NaN without Redis). */
  readonly redisCpuPerRequest: number;
  /** 2xx responses, and the wall time they took, s (to join slices: `joined`). */
  readonly responses: number;
  readonly seconds: number;
}

/**
 * One subject's slices of a round as one measurement: rates and CPU per request from the sums
 * (each slice weighs what it served), p99 the median of the slices'.
 */
export function joined(slices: readonly Round[]): Round {
  if (slices.length === 1) return slices[0]!;
  const sum = (f: (r: Round) => number) => slices.reduce((total, r) => total + f(r), 0);
  const responses = sum((r) => r.responses);
  const seconds = sum((r) => r.seconds);
  const perResponse = (f: (r: Round) => number) =>
    sum((r) => f(r) * Math.max(1, r.responses)) / Math.max(1, responses);
  return {
    rps: responses / seconds,
    p99: median(slices.map((r) => r.p99)),
    mean: perResponse((r) => r.mean),
    failures: sum((r) => r.failures),
    serverCpu: sum((r) => r.serverCpu * r.seconds) / seconds,
    loadCpu: sum((r) => r.loadCpu * r.seconds) / seconds,
    cpuPerRequest: perResponse((r) => r.cpuPerRequest),
    redisCpuPerRequest: perResponse((r) => r.redisCpuPerRequest),
    responses,
    seconds,
  };
}

/** The next returning client, shared by every connection so that the ids go round in turn. */
let nextClient = 0;
/**
 * Returning clients: every request carries the next id (autocannon rebuilds a request with a
 * `setupRequest` each time it sends it). One counter for all connections: a counter per
 * connection would have the 50 connections send the same id at once, a burst over its limit.
 */
const RETURNING = [
  {
    setupRequest: (request: { headers?: Record<string, string> }) => {
      nextClient = (nextClient + 1) % CLIENTS;
      return { ...request, headers: { ...request.headers, [CLIENT_HEADER]: `client-${nextClient}` } };
    },
  },
];

/**
 * Runs autocannon in this process against `server` for `seconds` (fractions allowed).
 * @param redisCpu redis-server's CPU time so far, µs, when the subject uses Redis
 * @param shape the subject's shape: `'returning'` sends the returning clients' ids
 */
export async function load(
  server: ServerProcess,
  seconds: number,
  redisCpu?: () => Promise<number>,
  shape: Shape = 'one-limit',
): Promise<Round> {
  const redisBefore = redisCpu === undefined ? Number.NaN : await redisCpu();
  const serverBefore = await server.cpuMicros();
  const loadBefore = process.cpuUsage();
  const started = performance.now();
  const result = await autocannon({
    url: `http://127.0.0.1:${server.port}${ROUTE}`,
    connections: CONNECTIONS,
    pipelining: PIPELINING,
    duration: seconds,
    // autocannon stops at its next sample tick: sample every 100 ms so a run lasts what it was asked.
    sampleInt: 100,
    ...(shape === 'returning' ? { requests: RETURNING } : {}),
  });
  const wallMicros = (performance.now() - started) * 1000;
  const loadUsed = process.cpuUsage(loadBefore);
  const serverUsed = (await server.cpuMicros()) - serverBefore;
  const redisUsed = redisCpu === undefined ? Number.NaN : (await redisCpu()) - redisBefore;
  return {
    rps: result['2xx'] / result.duration,
    p99: result.latency.p99,
    mean: result.latency.average,
    failures: result.non2xx + result.errors + result.timeouts,
    serverCpu: serverUsed / wallMicros,
    loadCpu: (loadUsed.user + loadUsed.system) / wallMicros,
    cpuPerRequest: serverUsed / Math.max(1, result['2xx']),
    redisCpuPerRequest: redisUsed / Math.max(1, result['2xx']),
    responses: result['2xx'],
    seconds: wallMicros / 1e6,
  };
}

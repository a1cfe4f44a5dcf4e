import autocannon from 'autocannon';
import type { ServerProcess } from './server-process.js';
import { ROUTE } from './subjects.js';

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
}

/**
 * Runs autocannon in this process against `server`, for `seconds` or for `{ requests }` (the
 * warm-up: the same number of requests for every subject, so each gets the same JIT warm-up).
 */
export async function load(server: ServerProcess, run: number | { requests: number }): Promise<Round> {
  const serverBefore = await server.cpuMicros();
  const loadBefore = process.cpuUsage();
  const started = performance.now();
  const result = await autocannon({
    url: `http://127.0.0.1:${server.port}${ROUTE}`,
    connections: CONNECTIONS,
    pipelining: PIPELINING,
    ...(typeof run === 'number' ? { duration: run } : { amount: run.requests }),
  });
  const wallMicros = (performance.now() - started) * 1000;
  const loadUsed = process.cpuUsage(loadBefore);
  const serverUsed = (await server.cpuMicros()) - serverBefore;
  return {
    rps: result['2xx'] / result.duration,
    p99: result.latency.p99,
    mean: result.latency.average,
    failures: result.non2xx + result.errors + result.timeouts,
    serverCpu: serverUsed / wallMicros,
    loadCpu: (loadUsed.user + loadUsed.system) / wallMicros,
  };
}

import type { EventLoopUtilityFunction, IntervalHistogram } from 'node:perf_hooks';
import { ErrorCode, SluiceError } from '../errors.js';

/**
 * Node's event-loop measurements, reached without importing a Node built-in (core loads on Bun,
 * Deno and Workers too), and only on the runtimes where they measure: each runtime was tried for
 * real (test/hono/runtimes). `performance.eventLoopUtilization()` is Node's alone: Bun and Deno
 * have none, and Workers' always answers 0. `monitorEventLoopDelay` records delays on Node and
 * Bun; Deno's histogram records none (0.04 ms after a 300 ms block, Deno 2.9), Workers have no
 * `node:perf_hooks` (without `nodejs_compat`).
 */
type Runtime = 'node' | 'bun' | 'deno' | 'workers' | 'other';

interface RuntimeGlobals {
  Bun?: unknown;
  Deno?: unknown;
  navigator?: { userAgent?: string };
  process?: { release?: { name?: string }; getBuiltinModule?: (id: string) => unknown };
  performance?: { eventLoopUtilization?: EventLoopUtilityFunction };
}

const globals = globalThis as RuntimeGlobals;

/** Bun and Deno also call themselves Node in `process.release`: they are told apart first. */
function runtime(): Runtime {
  if (globals.Bun !== undefined) return 'bun';
  if (globals.Deno !== undefined) return 'deno';
  if (globals.navigator?.userAgent === 'Cloudflare-Workers') return 'workers';
  return globals.process?.release?.name === 'node' ? 'node' : 'other';
}

/** Node's `performance.eventLoopUtilization`, or the coded error of a runtime without a working one. */
export function eventLoopUtilization(): EventLoopUtilityFunction {
  const performance = globals.performance;
  const utilization = performance?.eventLoopUtilization;
  if (runtime() !== 'node' || typeof utilization !== 'function') {
    throw new SluiceError(
      ErrorCode.UNSUPPORTED,
      `eventLoopUtilizationSignal() needs Node's performance.eventLoopUtilization(), which ${runtime()} lacks (or answers 0 with); give UtilizationShedder a signal of your own (signal: () => a utilization from 0 to 1)`,
      { option: 'signal', value: undefined },
    );
  }
  return utilization.bind(performance);
}

/** `monitorEventLoopDelay({ resolution })` from `node:perf_hooks`, or the coded error of a runtime without a working one. */
export function eventLoopDelayHistogram(resolution: number): IntervalHistogram {
  const where = runtime();
  const perfHooks = globals.process?.getBuiltinModule?.('node:perf_hooks') as
    | { monitorEventLoopDelay?: (options: { resolution: number }) => IntervalHistogram }
    | undefined;
  const monitor = perfHooks?.monitorEventLoopDelay;
  let cause: unknown;
  if ((where === 'node' || where === 'bun') && typeof monitor === 'function') {
    try {
      return monitor({ resolution });
    } catch (error) {
      cause = error;
    }
  }
  throw new SluiceError(
    ErrorCode.UNSUPPORTED,
    `eventLoopDelaySignal() needs monitorEventLoopDelay from node:perf_hooks (Node 20.16 or later, or Bun), which ${where} lacks (or records no delay with); use a signal of your own`,
    { cause },
  );
}

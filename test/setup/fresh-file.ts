/**
 * Runs before each test file (`setupFiles`). The test processes run file after file without a
 * fresh module graph (`isolate: false` in vitest.config.ts: a process and its imports per file
 * were most of the suite's CPU), so what a new process would start without is cleared here: the
 * configuration warnings sluice gives once per process. The files restore their own fake timers,
 * stubs and process listeners; the check below fails a file that leaves the timers replaced for
 * the next file in its process.
 */
import { afterAll, expect, vi } from 'vitest';
import { forgetWarnings } from './process-warnings.js';

forgetWarnings();

/** The globals a file may fake or spy on, as the process started with them. */
type Clock = Record<
  | 'setTimeout'
  | 'clearTimeout'
  | 'setInterval'
  | 'clearInterval'
  | 'setImmediate'
  | 'clearImmediate'
  | 'Date',
  unknown
> & { performanceNow: unknown };

const REAL = Symbol.for('sluice.test.realClock');
const scope = globalThis as unknown as Record<string | symbol, unknown> & { [REAL]?: Clock };
scope[REAL] ??= {
  setTimeout: globalThis.setTimeout,
  clearTimeout: globalThis.clearTimeout,
  setInterval: globalThis.setInterval,
  clearInterval: globalThis.clearInterval,
  setImmediate: globalThis.setImmediate,
  clearImmediate: globalThis.clearImmediate,
  Date: globalThis.Date,
  performanceNow: globalThis.performance.now,
};
const realClock = scope[REAL];

// Restoring every spy at a file's end is what a new process per file gave. A spy made on a timer
// while fake timers were installed restores the *fake* (vi.useRealTimers does not know the spy):
// every later file in the process then waits on a timer that never fires. Seen in CI as Fastify
// tests timing out at 20 s; so it fails the file that did it, and the real clock is put back.
afterAll(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
  const left: string[] = [];
  for (const [name, real] of Object.entries(realClock)) {
    if (name === 'performanceNow') {
      if (globalThis.performance.now !== real) {
        left.push('performance.now');
        globalThis.performance.now = real as typeof performance.now;
      }
    } else if (scope[name] !== real) {
      left.push(name);
      scope[name] = real;
    }
  }
  if (left.length > 0) {
    throw new Error(
      `this file left ${left.join(', ')} replaced once its mocks were restored (a vi.spyOn on a timer while fake timers were installed restores the fake): restore the spy before vi.useRealTimers()`,
    );
  }
});

// `SLUICE_TEST_COST=path`: one line per file appended to path (wall ms, this process's CPU ms, and
// the CPU of the child processes it waited for: tsc, npm, app processes), to find where the suite's
// time goes. Off by default.
const costFile = process.env.SLUICE_TEST_COST;
if (costFile !== undefined) {
  const { appendFileSync, readFileSync } = await import('node:fs');
  const children = () => {
    // /proc/self/stat fields 16 and 17: CPU of waited-for children, in clock ticks (100 per second).
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[13]) + Number(fields[14])) * 10;
  };
  const start = { wall: performance.now(), cpu: process.cpuUsage(), children: children() };
  afterAll(() => {
    const cpu = process.cpuUsage(start.cpu);
    const file = expect.getState().testPath ?? '?';
    appendFileSync(
      costFile,
      `${Math.round(performance.now() - start.wall)}\t${Math.round((cpu.user + cpu.system) / 1000)}\t${children() - start.children}\t${process.env.SLUICE_REDIS_CLIENT}\t${file}\n`,
    );
  });
}

/**
 * The Hono adapter's behaviour checks, as an app each real runtime serves (Bun, Deno, workerd)
 * from the BUILT `@sluice/hono`: copied next to the runtime's entry by `harness.ts`, never run
 * by vitest itself. Everything keys by the default address (`byIp()`): the runtime's own.
 */
import {
  concurrencyLimit,
  eventLoopDelaySignal,
  eventLoopUtilizationSignal,
  fixedWindow,
  MemoryStore,
  rateLimit,
} from '@sluice/hono';
import { Hono } from 'hono';

/** The codes of the configuration warnings this app heard, in order. */
const warnings: string[] = [];

const app = new Hono().basePath('/checks');

// A store whose clock stands still: the window never turns during the checks.
app.use(
  '/limited',
  rateLimit({
    name: 'checks',
    algorithm: fixedWindow({ limit: 2, window: '10s' }),
    store: new MemoryStore({ clock: () => 0 }),
    onWarning: (warning) => warnings.push(warning.code),
  }),
);
app.get('/limited', (c) => c.json({ remaining: c.get('rateLimit')?.remaining ?? null }));

// No options at all: the default limit, per client address (issue 25 §3).
app.use('/default', rateLimit());
app.get('/default', (c) => c.text('ok'));

// One request in flight per client address.
app.use('/lease/*', concurrencyLimit({ limit: 1, onWarning: (warning) => warnings.push(warning.code) }));
// Held until the test's gate server answers: the wait is real I/O, since workerd cancels a request
// that waits on nothing but another request.
app.get('/lease/hold', async (c) => {
  await (await fetch(c.req.query('gate') ?? '')).text();
  return c.text('held');
});
app.get('/lease/quick', (c) => c.text('quick'));
app.get('/warnings', (c) => c.json(warnings));

/** A shedding signal, or the code of the error it is refused with on this runtime. */
function attempt(make: () => () => number): (() => number) | string {
  try {
    return make();
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
}

// Each event-loop signal the runtime allows, read after the loop was blocked for 300 ms: one
// that measures reads 1 (the delay's 100 ms saturation is passed whatever the load).
app.get('/signals', async (c) => {
  const signals = {
    utilization: attempt(eventLoopUtilizationSignal),
    delay: attempt(() => eventLoopDelaySignal()),
  };
  const turn = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  if (Object.values(signals).some((signal) => typeof signal === 'function')) {
    await turn(20);
    const end = performance.now() + 300;
    while (performance.now() < end) {
      // Busy: the event loop is blocked.
    }
    await turn(30);
  }
  const read = (signal: (() => number) | string) => {
    if (typeof signal === 'string') return signal;
    const value = signal();
    (signal as { close?: () => void }).close?.();
    return value;
  };
  return c.json({ utilization: read(signals.utilization), delay: read(signals.delay) });
});

export default app;

import { Agent, request } from 'node:http';

/** What one open-loop run saw: requests sent and 2xx answers, per class; failures (errors, timeouts). */
export interface OpenLoopResult {
  readonly sent: { critical: number; low: number };
  readonly ok: { critical: number; low: number };
  readonly failures: number;
  /** ms from sending to the end of each 2xx answer, as the client saw it. */
  readonly latencies: number[];
}

/**
 * Open-loop load with evenly spaced arrivals: request i leaves at `i / rate` s, whatever the
 * answers, over keep-alive sockets (as many as are busy). autocannon's `overallRate` paces each
 * connection on its own timer, so its connections fire together: bursts of `connections`
 * requests every `connections / rate` s, which a limit set at the downstream's concurrency meets
 * with idle slots between bursts (a bare counter of 20 in flight got ~115/s of a 400/s
 * downstream that way). Real arrivals are not synchronised; evenly spaced ones are the fair
 * approximation. Every `criticalEvery`-th request is critical (the mix is exact, not drawn).
 */
export async function openLoop(
  url: string,
  rate: number,
  seconds: number,
  options: { header: string; criticalEvery: number; timeoutMs: number },
): Promise<OpenLoopResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
  const sent = { critical: 0, low: 0 };
  const ok = { critical: 0, low: 0 };
  let failures = 0;
  const latencies: number[] = [];
  const pending = new Set<Promise<void>>();
  const total = Math.round(rate * seconds);
  const start = performance.now();
  const fire = (i: number) => {
    const critical = i % options.criticalEvery === 0;
    if (critical) sent.critical++;
    else sent.low++;
    const sentAt = performance.now();
    const done = new Promise<void>((resolve) => {
      const req = request(
        url,
        { agent, headers: { [options.header]: critical ? 'critical' : 'low' }, timeout: options.timeoutMs },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode! >= 200 && res.statusCode! < 300) {
              ok[critical ? 'critical' : 'low']++;
              latencies.push(performance.now() - sentAt);
            }
            resolve();
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', () => {
        failures++;
        resolve();
      });
      req.end();
    });
    pending.add(done);
    void done.then(() => pending.delete(done));
  };
  let next = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * rate) + 1);
      while (next < due) fire(next++);
      if (next >= total) resolve();
      else setImmediate(tick);
    };
    tick();
  });
  await Promise.all(pending);
  agent.destroy();
  return { sent, ok, failures, latencies };
}

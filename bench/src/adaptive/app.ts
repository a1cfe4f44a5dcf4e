/**
 * One bench app in its own process: `app.ts <framework> <subject>`. GET /work calls the
 * downstream and answers 200; the subject guards it. IPC: 'stats' (p99 of 2xx, served, the limit's
 * samples), 'halve' (the downstream halves its capacity), 'stop'.
 */
import { createHistogram } from 'node:perf_hooks';
import underPressure from '@fastify/under-pressure';
import {
  AdaptiveConcurrency,
  aimd,
  type ControllerKind,
  envoyGradient,
  gradient2,
  type LimitController,
  vegas,
} from '@sluice/core';
import * as sluiceExpress from '@sluice/express';
import { sluice } from '@sluice/fastify';
import express from 'express';
import Fastify from 'fastify';
import { Downstream } from './downstream.js';
import {
  type Framework,
  type FromApp,
  PARTITIONS,
  PRIORITY_HEADER,
  SERVICE_MS,
  SLOTS,
  type SubjectId,
  type ToApp,
} from './subjects.js';

const [framework, subject] = process.argv.slice(2) as [Framework, SubjectId];
const downstream = new Downstream(SLOTS, SERVICE_MS);
const latency = createHistogram();
let served = 0;
const send = (message: FromApp) => process.send!(message);

const CONTROLLERS: Record<ControllerKind, () => LimitController> = {
  vegas: () => vegas(),
  gradient2: () => gradient2(),
  aimd: () => aimd(),
  'envoy-gradient': () => envoyGradient(),
};
const adaptive =
  subject in CONTROLLERS
    ? new AdaptiveConcurrency({
        controller: CONTROLLERS[subject as ControllerKind](),
        partitions: PARTITIONS,
      })
    : undefined;
const limits: number[] = [];
if (adaptive !== undefined) setInterval(() => limits.push(adaptive.limit), 100).unref();

const priority = (headers: Record<string, string | string[] | undefined>) =>
  headers[PRIORITY_HEADER] === 'critical' ? 'critical' : 'low';
const all = () => 'all';
/** The fixed limit tuned right is the downstream's own concurrency; the other is 4× too high. */
const fixedLimit = subject === 'fixed' ? SLOTS : SLOTS * 4;

async function work(started: bigint): Promise<void> {
  await downstream.call();
  served++;
  latency.record(Number((process.hrtime.bigint() - started) / 1000n) || 1);
}

async function start(): Promise<number> {
  if (framework === 'fastify') {
    const app = Fastify();
    if (subject === 'under-pressure') {
      // Its documented use: shed when the event loop lags. The bottleneck here is downstream, not
      // the loop: this row shows what a fixed local signal sees of it.
      await app.register(underPressure, { maxEventLoopDelay: 100, retryAfter: 1 });
    } else if (subject === 'fixed' || subject === 'fixed-4x') {
      await app.register(sluice, { global: false, concurrencyLimit: { limit: fixedLimit, key: all } });
    } else if (adaptive !== undefined) {
      await app.register(sluice, {
        global: false,
        adaptiveConcurrency: { limiter: adaptive, priority: (request) => priority(request.headers) },
      });
    }
    app.get('/work', async () => {
      await work(process.hrtime.bigint());
      return 'ok';
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    return (app.server.address() as { port: number }).port;
  }
  const app = express();
  if (subject === 'fixed' || subject === 'fixed-4x') {
    app.use(sluiceExpress.concurrencyLimit({ limit: fixedLimit, key: all }));
  } else if (adaptive !== undefined) {
    app.use(
      sluiceExpress.adaptiveConcurrency({ limiter: adaptive, priority: (req) => priority(req.headers) }),
    );
  }
  app.get('/work', (_req, res, next) => {
    work(process.hrtime.bigint()).then(() => res.send('ok'), next);
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return (server.address() as { port: number }).port;
}

process.on('message', (message: ToApp) => {
  if (message === 'halve') downstream.halve();
  else if (message === 'stats') {
    send({
      type: 'stats',
      p99: latency.count === 0 ? 0 : latency.percentile(99) / 1000,
      served,
      limits: limits.splice(0),
    });
    latency.reset();
    served = 0;
  } else if (message === 'stop') process.exit(0);
});

start().then((port) => send({ type: 'ready', port }));

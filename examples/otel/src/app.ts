import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { byIp, fixedWindow, MemoryStore, rateLimit, tokenBucket } from '@sluice/express';
import { SluiceMetrics } from '@sluice/otel';
import express from 'express';

/**
 * An API whose rate-limit metrics Prometheus scrapes at /metrics: every decision counted by
 * policy, outcome and reason (a shadow limit included), the store's latency as a histogram.
 */
export function createApp(): express.Express {
  // The exporter is a metric reader; it serves the Prometheus text format on this app's port.
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const provider = new MeterProvider({ readers: [exporter] });
  const telemetry = new SluiceMetrics({ meter: provider.getMeter('sluice-example') });
  const store = telemetry.timeStore(new MemoryStore(), 'memory');

  const app = express();
  app.get('/metrics', (req, res) => exporter.getMetricsRequestHandler(req, res));
  app.use(
    rateLimit({
      limits: [
        // 5 requests at once, then 1 per second, per client address.
        {
          name: 'burst',
          key: byIp(),
          algorithm: tokenBucket({ capacity: 5, refillAmount: 1, refillInterval: '1s' }),
        },
        // Rolling out a stricter limit: counted and reported, never refusing.
        {
          name: 'strict',
          key: byIp(),
          algorithm: fixedWindow({ limit: 2, window: '1m' }),
          enforce: false,
        },
      ],
      store,
      onDecision: telemetry.onDecision,
    }),
  );
  app.get('/', (_req, res) => {
    res.json({ hello: 'world' });
  });
  return app;
}

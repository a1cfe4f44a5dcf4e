import type { SluiceWarning } from '@sluice/core';
import {
  type AdapterDefaults,
  CONSOLE_DEFAULTS,
  DEFAULT_LOG_LINES,
  fewErrorLines,
  releaseLines,
} from '@sluice/core/adapter';
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';

/**
 * Where the plugin reports when the app gave no `onError` / `onWarning`: Fastify's logger when the
 * app has one, else the console, as in Express and Koa. Fastify's default is no logger at all (its
 * `log` then discards every line), and a limiter that fails or a client address it cannot read
 * must not go unsaid.
 */
export function fastifyDefaults(app: FastifyInstance): AdapterDefaults<FastifyRequest> {
  if (!hasLogger(app.log)) return CONSOLE_DEFAULTS;
  return {
    onError: fewErrorLines<FastifyRequest>({
      error(error, request): void {
        request.log.error({ err: error }, `sluice: ${DEFAULT_LOG_LINES.error}`);
      },
      line(text): void {
        app.log.error(`sluice: ${text}`);
      },
    }),
    onWarning(warning: SluiceWarning): void {
      app.log.warn({ code: warning.code }, warning.message);
    },
    onReleaseError: releaseLines({
      error(error): void {
        app.log.error({ err: error }, `sluice: ${DEFAULT_LOG_LINES.releaseError}`);
      },
      line(text): void {
        app.log.error(`sluice: ${text}`);
      },
    }),
  };
}

/**
 * Whether the app has a logger. Without `logger` or `loggerInstance`, Fastify 5 logs through
 * abstract-logging's object (`lib/logger-factory.js`): one no-op function for every level, and no
 * `level`. Pino's loggers have a `level` (Fastify wraps a `loggerInstance` in a pino child); a
 * logger of another kind has its own method per level. A pino logger at level `'silent'` is the
 * app's own choice of silence, and is kept.
 */
function hasLogger(log: FastifyBaseLogger): boolean {
  if (typeof (log as { level?: unknown }).level === 'string') return true;
  return !(log.error === log.warn && log.warn === log.info);
}

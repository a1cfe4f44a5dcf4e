import type { Decision } from '../decision.js';
import { functionOption } from '../validate.js';
import { DEFAULT_LOG_LINES } from './default-log-lines.js';
import { fewErrorLines, releaseLines } from './error-log.js';
import type { RequestAccess } from './keys.js';
import { firstInProcess } from './once-per-process.js';
import type { SluiceWarning } from './options.js';

/** What an adapter supplies about its request type; `warn` is added from the options. */
export type RequestAccessBase<Req> = Omit<RequestAccess<Req>, 'warn'>;

/** The adapter's defaults for the reporting options the user left out. */
export interface AdapterDefaults<Req> {
  onError(error: Error, req: Req): void;
  onWarning(warning: SluiceWarning): void;
  /**
   * A lease release that failed in the store (the lease then expires after its ttl), for the
   * limiters and shedders a guard builds from inline options. One built by the user reports
   * to its own `onError`.
   */
  onReleaseError(error: unknown): void;
}

/** The reporting options every middleware takes (rate limit and guards). */
interface ReportingOptions<Req> {
  onLimited?: ((req: Req, decision: Decision) => void) | undefined;
  onError?: ((error: Error, req: Req) => void) | undefined;
  onWarning?: ((warning: SluiceWarning) => void) | undefined;
}

/**
 * Where one middleware tells the app what happened, resolved once from its options and the
 * adapter's defaults: refused requests (`onLimited`), failures (`onError`) and configuration
 * warnings (`onWarning`). A throwing hook never reaches the client.
 */
export class Reporter<Req> {
  private readonly onLimited: ((req: Req, decision: Decision) => void) | undefined;
  private readonly onError: (error: Error, req: Req) => void;
  private readonly onWarning: (warning: SluiceWarning) => void;

  constructor(options: ReportingOptions<Req>, defaults: AdapterDefaults<Req>) {
    this.onLimited = functionOption('onLimited', options.onLimited);
    this.onError = functionOption('onError', options.onError) ?? defaults.onError;
    this.onWarning = functionOption('onWarning', options.onWarning) ?? defaults.onWarning;
  }

  /** The adapter's request access, with `warn` going to `onWarning`. */
  access(base: RequestAccessBase<Req>): RequestAccess<Req> {
    return {
      ip: base.ip,
      method: base.method,
      route: base.route,
      header: base.header,
      proxyTrust: base.proxyTrust,
      // Once per process, whichever middleware sees the mistake first (each one has its own keys).
      warn: (code, message) => {
        if (firstInProcess(code)) this.onWarning({ code, message: `sluice: ${message}` });
      },
    };
  }

  /** Runs `onLimited`; a throwing hook is reported to `onError`, never to the client. */
  limited(req: Req, decision: Decision): void {
    if (this.onLimited === undefined) return;
    try {
      this.onLimited(req, decision);
    } catch (error) {
      this.error(error, req);
    }
  }

  /** Tells `onError`; a failing error hook has nowhere left to report to, and is ignored. */
  error(error: unknown, req: Req): void {
    try {
      this.onError(error instanceof Error ? error : new Error(String(error)), req);
    } catch {
      // The request must still be answered.
    }
  }
}

/**
 * The defaults of an adapter whose framework has no logger (Express, Koa; Fastify with its
 * logger off): errors to `console.error` in a few lines (`fewErrorLines`: one per distinct
 * message, then a count every 10 s, for every middleware of the process together), configuration
 * warnings to `process.emitWarning` (each code once per process: `Reporter` asks `firstInProcess`).
 */
export const CONSOLE_DEFAULTS: AdapterDefaults<unknown> = {
  onError: fewErrorLines({
    error(error: Error): void {
      console.error(`[sluice] ${DEFAULT_LOG_LINES.error}:`, error);
    },
    line(text: string): void {
      console.error(`[sluice] ${text}`);
    },
  }),
  onWarning(warning: SluiceWarning): void {
    process.emitWarning(warning.message, { code: warning.code });
  },
  // A store away fails every release: a few lines, as onError (the first failure with its stack).
  onReleaseError: releaseLines({
    error(error: Error): void {
      console.error(`[sluice] ${DEFAULT_LOG_LINES.releaseError}:`, error);
    },
    line(text: string): void {
      console.error(`[sluice] ${text}`);
    },
  }),
};

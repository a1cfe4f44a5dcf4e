import { SUMMARY_INTERVAL } from '../http/error-log.js';
import type { BreakerState } from './breaker.js';
import type { StoreLogger } from './failure-options.js';

/** Who speaks in the lines: the store, its backend, and what answers while the backend is away. */
export interface FailureLogNames {
  readonly store: string;
  readonly backend: string;
  /** How the failure policy answers, for the lines: `failurePolicy 'local' (…)`. */
  readonly policy: string;
}

/**
 * A store's failures, said loudly but in a few lines: a store that cannot reach its backend must
 * never be silent (a limiter that stops limiting is a security control switched off), and it
 * must not write a line per request either (a flood during an outage would drown the log). So:
 * one line when failing starts (what failed, and how requests are answered meanwhile), one per
 * breaker opening or closing, one count every `SUMMARY_INTERVAL` while failures last (written by
 * the next failure or policy answer past it: no timer), and one when the backend answers again.
 */
export class FailureLog {
  /** Clock ms when the current failing period started; undefined while healthy. */
  private since: number | undefined;
  /** Calls answered by the failure policy since the period started, and since the last line. */
  private answeredTotal = 0;
  private answeredLately = 0;
  private lastLine = 0;
  private lastError = '';

  constructor(
    private readonly logger: StoreLogger,
    private readonly clock: () => number,
    private readonly names: FailureLogNames,
  ) {}

  /** Whether a failing period is open (a success then ends it): the gate's one check per success. */
  get failing(): boolean {
    return this.since !== undefined;
  }

  /** A call to the backend failed (`operation`: what it was). */
  failed(operation: string, error: unknown): void {
    this.lastError = `${operation}: ${messageOf(error)}`;
    if (this.since === undefined) {
      const now = this.clock();
      this.since = now;
      this.lastLine = now;
      this.answeredTotal = this.answeredLately = 0;
      const { store, backend, policy } = this.names;
      // A release is not answered by the policy: the lease stays where it was taken until its ttl.
      const lease =
        operation === 'release'
          ? `; a lease whose release failed stays held in ${backend} until its ttl`
          : '';
      this.write(
        `${store}: ${backend} failed (${this.lastError})${lease}; requests are answered by ${policy} until it answers again`,
      );
      return;
    }
    this.summary();
  }

  /** A call was answered by the failure policy (after a failure, or at once by the open breaker). */
  answered(): void {
    this.answeredTotal++;
    this.answeredLately++;
    if (this.since !== undefined) this.summary();
  }

  /** A call the backend answered: ends a failing period. */
  recovered(): void {
    const since = this.since;
    if (since === undefined) return;
    this.since = undefined;
    const { store, backend, policy } = this.names;
    const seconds = ((this.clock() - since) / 1000).toFixed(1);
    this.write(
      `${store}: ${backend} answers again after ${seconds} s; ${this.answeredTotal} calls were answered by ${policy} meanwhile`,
    );
  }

  /** The circuit breaker changed state: its opening and closing are written (not each probe). */
  breaker(state: BreakerState, previous: BreakerState, failures: number, cooldown: number): void {
    const { store, backend, policy } = this.names;
    if (state === 'open' && previous === 'closed') {
      this.write(
        `${store}: circuit breaker open after ${failures} failed calls: calls go to ${policy} without waiting for ${backend}; one probe every ${cooldown} ms`,
      );
    } else if (state === 'closed') {
      this.write(`${store}: circuit breaker closed: calls go to ${backend} again`);
    }
  }

  /** Writes the count since the last line, once `SUMMARY_INTERVAL` has passed. */
  private summary(): void {
    const now = this.clock();
    if (now - this.lastLine < SUMMARY_INTERVAL) return;
    const seconds = ((now - this.lastLine) / 1000).toFixed(1);
    const { store, backend, policy } = this.names;
    this.write(
      `${store}: ${backend} still failing (${this.lastError}): ${this.answeredLately} calls answered by ${policy} in the last ${seconds} s`,
    );
    this.lastLine = now;
    this.answeredLately = 0;
  }

  private write(line: string): void {
    try {
      this.logger.warn(`[sluice] ${line}`);
    } catch {
      // A logger that throws must not turn a handled failure into a crash.
    }
  }
}

/** How a policy answers, for the log's lines. */
export function policyText(policy: 'local' | 'allow' | 'deny' | 'store', share: number): string {
  const scaled = share === 1 ? 'the same limits' : `${formatShare(share)} of each limit`;
  switch (policy) {
    case 'local':
      return `failurePolicy 'local' (${scaled}, decided in this process)`;
    case 'allow':
      return "failurePolicy 'allow' (admitted: requests are not limited)";
    case 'deny':
      return "failurePolicy 'deny' (refused as 'store-unavailable': a 503 from the HTTP adapters)";
    default:
      return `the fallback store of failurePolicy (${scaled})`;
  }
}

export function formatShare(share: number): string {
  const n = 1 / share;
  return Number.isInteger(n) ? `1/${n}` : String(share);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

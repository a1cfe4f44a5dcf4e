import { DEFAULT_LOG_LINES } from './default-log-lines.js';

/**
 * ms between two count lines while failures last: the middlewares' default `onError` here, and
 * the stores' failure logs (@sluice/redis `FailureLog`), one cadence in every log of sluice.
 */
export const SUMMARY_INTERVAL = 10_000;

/**
 * The distinct error messages written with their stacks; past them, new messages are only
 * counted. A key function that puts the client's input in its message must not let a client
 * write a stack per request, nor grow this set without end.
 */
const DISTINCT_MESSAGES = 10;

/** What a count line calls the errors it counts, and what it says became of them. */
export interface CountWords {
  /** The errors, singular and plural: `'limiter error'`, `'limiter errors'`. */
  readonly one: string;
  readonly many: string;
  /** The end of the line: what happened to each. */
  readonly outcome: string;
}

/** `onError`'s count line: failed checks, each answered by the failure policy. */
const LIMITER_ERRORS: CountWords = {
  one: 'limiter error',
  many: 'limiter errors',
  outcome: DEFAULT_LOG_LINES.counted,
};

/** `onReleaseError`'s count line: lease releases the store did not take. */
const RELEASE_ERRORS: CountWords = {
  one: 'failed lease release',
  many: 'failed lease releases',
  outcome: DEFAULT_LOG_LINES.releaseCounted,
};

/** Where the default `onError` writes, in the adapter's logger. */
export interface ErrorLogWriters<Req> {
  /** One error, with its stack (and the request, for a logger that tells it). */
  error(error: Error, req: Req): void;
  /** One count line. */
  line(text: string): void;
}

/**
 * The adapters' default `onError`: a failure said loudly, but in a few lines. A store, key,
 * cost or skip function that fails fails for every request, and a key function that throws on
 * malformed input lets any client write a line per request: a flood would drown the log. So:
 * the first error of each distinct message with its stack (up to `DISTINCT_MESSAGES`), then a
 * count of the others at most every `SUMMARY_INTERVAL`, written by an unref'd timer when
 * its interval ends. A user's `onError` replaces this and hears every error.
 */
export function fewErrorLines<Req>(
  writers: ErrorLogWriters<Req>,
  words: CountWords = LIMITER_ERRORS,
): (error: Error, req: Req) => void {
  const log = new ErrorLog(writers, words);
  return (error, req) => log.error(error, req);
}

/**
 * An adapter's default `onReleaseError` over its logger's writers: `fewErrorLines` with the count
 * line of failed releases (a release has no request). A failure that is not an `Error` is wrapped
 * in one for its message; its stack is then this function's.
 */
export function releaseLines(writers: ErrorLogWriters<undefined>): (error: unknown) => void {
  const log = fewErrorLines(writers, RELEASE_ERRORS);
  return (error) => log(error instanceof Error ? error : new Error(String(error)), undefined);
}

class ErrorLog<Req> {
  private readonly written = new Set<string>();
  /** Errors counted and not yet written, and the last one's words. */
  private counted = 0;
  private latest = '';
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly writers: ErrorLogWriters<Req>,
    private readonly words: CountWords,
  ) {}

  error(error: Error, req: Req): void {
    const words = String(error);
    if (!this.written.has(words) && this.written.size < DISTINCT_MESSAGES) {
      this.written.add(words);
      this.write(() => this.writers.error(error, req));
      return;
    }
    this.counted++;
    this.latest = words;
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => this.summary(), SUMMARY_INTERVAL);
    // A count still to write must not keep a process that is done from exiting.
    this.timer.unref?.();
  }

  private summary(): void {
    this.timer = undefined;
    const count = this.counted;
    this.counted = 0;
    const { one, many, outcome } = this.words;
    this.write(() =>
      this.writers.line(
        `${count} more ${count === 1 ? one : many} in the last ${SUMMARY_INTERVAL / 1000} s (latest: ${this.latest}), ${outcome}`,
      ),
    );
  }

  private write(write: () => void): void {
    try {
      write();
    } catch {
      // A logger that throws must not turn a handled failure into a failed request.
    }
  }
}

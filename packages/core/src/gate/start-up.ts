import { ErrorCode, SluiceError } from '../errors.js';

/**
 * Client states in which a call is not waited for: `ready` (send it), `end` (closed by its owner or
 * out of reconnection attempts: the call fails as usual), `wait` (`lazyConnect` not yet told to
 * connect: the command itself starts the connection, as ioredis does without the store).
 */
const NO_WAIT = new Set(['ready', 'end', 'wait']);

/** The client as the start-up wait reads it: its status, and its first `ready` (or `end`). */
export interface StartUpClient {
  readonly status: string;
  once(event: 'ready' | 'end', listener: (...args: unknown[]) => void): unknown;
  removeListener(event: 'ready' | 'end', listener: (...args: unknown[]) => void): unknown;
}

/**
 * Calls made before the client's first `ready` wait for it, at most `readyTimeout` ms: before the
 * first connection a call would fail at once (offline queue off) or wait in the client's queue
 * past the store's timeout; either way it would count as the backend failing and open the breaker
 * before the backend was ever asked. Past the bound (or if the client ends first) the waiting
 * calls are answered by the failure policy and one failure is reported (`'connect'`); later calls
 * no longer wait.
 */
export class StartUp {
  /** The client has been ready once, or the wait is over: calls no longer wait. */
  private started: boolean;
  /** While calls wait: resolves true once ready, false past the bound. */
  private starting: Promise<boolean> | undefined;
  /** Limits and lease sets of the calls waiting (the `keys` of the `'connect'` report). */
  private waitingKeys = 0;

  constructor(
    private readonly client: StartUpClient,
    private readonly readyTimeout: number,
    /** Reports the wait that ended without a connection: `keys` waited, and why. */
    private readonly failed: (keys: number, why: string) => void,
  ) {
    // A client ready before any call (now, or later in the background) is never waited for again.
    this.started = readyTimeout === 0 || client.status === 'ready';
    if (!this.started) {
      client.once('ready', () => {
        this.started = true;
      });
    }
  }

  /**
   * Undefined when a call may go now; else the wait for the client's first `ready` (shared by
   * every call that arrives meanwhile): true once ready, false past `readyTimeout` or if the client
   * ends first.
   */
  wait(keys: number): Promise<boolean> | undefined {
    if (this.started) return undefined;
    const client = this.client;
    const status = client.status;
    if (status === 'ready') this.started = true;
    if (NO_WAIT.has(status)) return undefined;
    this.waitingKeys += keys;
    this.starting ??= new Promise<boolean>((resolve) => {
      const done = (ready: boolean, why?: string) => {
        clearTimeout(timer);
        client.removeListener('ready', onReady);
        client.removeListener('end', onEnd);
        this.starting = undefined;
        const waited = this.waitingKeys;
        this.waitingKeys = 0;
        if (why !== undefined) this.failed(waited, why);
        resolve(ready);
      };
      const onReady = () => {
        this.started = true;
        done(true);
      };
      const onEnd = () => done(false, 'ended before it was ready');
      const ms = this.readyTimeout;
      const timer = setTimeout(() => {
        // The start-up is over: later calls go to the client as they are (and count as usual).
        this.started = true;
        done(false, `was not ready within readyTimeout (${ms} ms; status '${client.status}')`);
      }, ms);
      timer.unref?.();
      client.once('ready', onReady);
      client.once('end', onEnd);
    });
    return this.starting;
  }
}

/** The error of a start-up wait that ended without a connection. */
export function startUpError(store: string, backend: string, why: string): SluiceError {
  return new SluiceError(ErrorCode.STORE_FAILURE, `${store}: the ${backend} client ${why}`);
}

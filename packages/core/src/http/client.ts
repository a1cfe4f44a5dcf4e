/**
 * The part of a Node `ServerResponse` (Express `res`, Fastify `reply.raw`) that tells whether the
 * client is still there: 'close' before the response ended means the client went away.
 */
export interface ClientResponse {
  readonly writableEnded: boolean;
  readonly destroyed: boolean;
  once(event: 'close', listener: () => void): unknown;
  removeListener(event: 'close', listener: () => void): unknown;
  /**
   * `true`: asking is not free (reading a Deno request's `signal` turns on a runtime warning), so
   * it is not asked when the request arrives, only once it has waited (a store's answer, a hold).
   * @default false
   */
  readonly deferred?: boolean;
}

/** Whether the client has already gone: its connection closed before the response ended. */
export function clientLeft(response: ClientResponse): boolean {
  return response.destroyed === true && !response.writableEnded;
}

/** Watches a request's client from now on: `signal` aborts when it leaves; `stop` stops watching. */
export interface ClientWatch {
  readonly signal: AbortSignal;
  stop(): void;
}

/**
 * Starts watching `response` for the client leaving. Call it in the same tick as the request's
 * store call starts (nothing can close in between), and `stop` once the request is passed on or
 * answered.
 */
export function watchClient(response: ClientResponse): ClientWatch {
  const controller = new AbortController();
  const gone = () => {
    if (!response.writableEnded) controller.abort();
  };
  response.once('close', gone);
  if (clientLeft(response)) controller.abort();
  return {
    signal: controller.signal,
    stop: () => {
      response.removeListener('close', gone);
    },
  };
}

/**
 * A `ClientResponse` for runtimes without a Node response (Bun, Deno, Workers): the request's
 * `AbortSignal`, which aborts when the client goes away where the runtime supports it. Given as a
 * function, the signal is read only when first needed; with `deferred`, not at the request's
 * arrival either (see `ClientResponse.deferred`).
 */
export function signalClient(
  signal: AbortSignal | (() => AbortSignal),
  options: { deferred?: boolean } = {},
): ClientResponse {
  const read = typeof signal === 'function' ? signal : () => signal;
  return {
    writableEnded: false,
    deferred: options.deferred === true,
    get destroyed() {
      return read().aborted;
    },
    once(_event, listener) {
      read().addEventListener('abort', listener, { once: true });
    },
    removeListener(_event, listener) {
      read().removeEventListener('abort', listener);
    },
  };
}

/** Whether the client left before the request reached this middleware (not asked of a `deferred` one). */
export function leftOnArrival(response: ClientResponse): boolean {
  return response.deferred !== true && clientLeft(response);
}

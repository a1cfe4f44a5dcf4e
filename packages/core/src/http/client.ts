/**
 * The part of a Node `ServerResponse` (Express `res`, Fastify `reply.raw`) that tells whether the
 * client is still there: 'close' before the response ended means the client went away.
 */
export interface ClientResponse {
  readonly writableEnded: boolean;
  readonly destroyed: boolean;
  once(event: 'close', listener: () => void): unknown;
  removeListener(event: 'close', listener: () => void): unknown;
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
 * `AbortSignal`, which aborts when the client goes away where the runtime supports it.
 */
export function signalClient(signal: AbortSignal): ClientResponse {
  return {
    writableEnded: false,
    get destroyed() {
      return signal.aborted;
    },
    once(_event, listener) {
      signal.addEventListener('abort', listener, { once: true });
    },
    removeListener(_event, listener) {
      signal.removeEventListener('abort', listener);
    },
  };
}

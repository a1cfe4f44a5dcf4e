/**
 * Resolves after `ms`, or rejects with the signal's reason as soon as it aborts (and the timer is
 * cleared): `setTimeout` from `node:timers/promises`, over the global `setTimeout` that every
 * runtime has.
 */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const abort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', abort);
      resolve();
    }, ms);
    signal.addEventListener('abort', abort, { once: true });
  });
}

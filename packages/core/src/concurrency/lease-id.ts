import { base64url } from '../base64url.js';

/**
 * 64 random bits per process: two processes of a fleet draw the same prefix once in ~2^32 fleets.
 * Drawn with the first lease, not when the module loads: Workers refuse randomness at start-up.
 */
let processPrefix: string | undefined;
let counter = 0;

/**
 * A lease id unique across the fleet: a random per-process prefix and a counter. Cheaper than a
 * UUID per request, and as unique for as long as a lease can live.
 */
export function leaseId(): string {
  processPrefix ??= base64url(crypto.getRandomValues(new Uint8Array(8)));
  counter = counter === Number.MAX_SAFE_INTEGER ? 0 : counter + 1;
  return `${processPrefix}.${counter.toString(36)}`;
}

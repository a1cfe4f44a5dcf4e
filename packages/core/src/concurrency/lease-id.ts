import { randomBytes } from 'node:crypto';

/** 64 random bits per process: two processes of a fleet draw the same prefix once in ~2^32 fleets. */
const PROCESS = randomBytes(8).toString('base64url');
let counter = 0;

/**
 * A lease id unique across the fleet: a random per-process prefix and a counter. Cheaper than a
 * UUID per request, and as unique for as long as a lease can live.
 */
export function leaseId(): string {
  counter = counter === Number.MAX_SAFE_INTEGER ? 0 : counter + 1;
  return `${PROCESS}.${counter.toString(36)}`;
}

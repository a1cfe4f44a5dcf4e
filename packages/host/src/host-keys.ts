import { createHash } from 'node:crypto';
import type { Algorithm } from '@sluice/core';
import { MAX_KEY_BYTES, storedId, storedIdOfText } from './stored-key.js';

/** A lone surrogate: a string holding one is not well-formed UTF-16, and UTF-8 cannot hold it. */
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * The stored key of a user's key (any string) in a space: its UTF-8 bytes; a string that is not
 * well-formed (a lone surrogate, which UTF-8 would turn into U+FFFD, so two such strings could
 * meet) as its UTF-16 code units; one longer than MAX_KEY_BYTES (LMDB's keys are bounded) as its
 * SHA-256. Each form has a prefix of its own, so no two strings share a stored key.
 */
function hostId(space: string, key: string): string {
  if (LONE_SURROGATE.test(key)) return fitting(`${space}|utf16`, Buffer.from(key, 'utf16le'));
  // At most 3 UTF-8 bytes per UTF-16 unit: such a key fits whole (and an ASCII one needs no Buffer).
  if (key.length * 3 <= MAX_KEY_BYTES) return storedIdOfText(space, key);
  return fitting(space, Buffer.from(key, 'utf8'));
}

function fitting(prefix: string, bytes: Buffer): string {
  if (bytes.length <= MAX_KEY_BYTES) return storedId(prefix, bytes);
  return storedId(`${prefix}|sha256`, createHash('sha256').update(bytes).digest());
}

/**
 * Where HostStore keeps things, by space: a limit's state under its algorithm's fingerprint (kind,
 * params and limit name, so two differently configured limits never share state), its block
 * record beside it, a lease set under its limiter's name.
 */
export const hostKeys = {
  state: (algorithm: Algorithm, key: string) => hostId(`host:${algorithm.fingerprint}`, key),
  block: (algorithm: Algorithm, key: string) => hostId(`host-block:${algorithm.fingerprint}`, key),
  lease: (space: string, key: string) => hostId(`host-lease:${space}`, key),
};

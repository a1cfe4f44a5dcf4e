import { ErrorCode } from '@sluice/core';
import { MAX_KEY_BYTES } from '@sluice/host/state';
import * as resp from './resp.js';

/** The error for a key over {@link MAX_KEY_BYTES}, or undefined when it fits. */
export function keyTooLong(key: Buffer): resp.Reply | undefined {
  if (key.length <= MAX_KEY_BYTES) return undefined;
  return resp.error(`${ErrorCode.INVALID_KEY} key must be at most ${MAX_KEY_BYTES} bytes; got ${key.length}`);
}

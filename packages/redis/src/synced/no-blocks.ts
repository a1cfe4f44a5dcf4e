import { ErrorCode, type LimitCall, SluiceError } from '@sluice/core';

/**
 * A block is one key's refusal for a while after it went over its limit: each node would block on
 * its own view, at its own time, and the fleet would not agree on it. Refused, coded, rather than
 * answered as a plain limit that never blocks.
 */
export function assertNoBlocks(calls: readonly LimitCall[]): void {
  for (const call of calls) {
    if (call.block !== undefined) {
      throw new SluiceError(
        ErrorCode.UNSUPPORTED,
        `SyncedStore does not support block on limit ${JSON.stringify(call.policy)}; use RedisStore or MemoryStore for it`,
        { option: 'block', value: call.policy },
      );
    }
  }
}

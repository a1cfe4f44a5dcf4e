import type { LimitCall } from '@sluice/core';

/**
 * The key of a limit's block record (`LimitCall.block`): its state key and `:b`. The state key
 * ends with its hash tag (`…:{key}`), so the record lives in the same Cluster slot.
 */
export function blockKey(stateKey: string): string {
  return `${stateKey}:b`;
}

/** The batch script's KEYS: the state keys, then the block record key of each call with a block. */
export function withBlockKeys(keys: readonly string[], calls: readonly LimitCall[]): readonly string[] {
  let all: string[] | undefined;
  for (let i = 0; i < calls.length; i++) {
    if (calls[i]!.block === undefined) continue;
    all ??= [...keys];
    all.push(blockKey(keys[i]!));
  }
  return all ?? keys;
}

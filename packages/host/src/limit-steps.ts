import type { Algorithm, Decision, LimitCall } from '@sluice/core';
import {
  type BlockState,
  batchStep,
  blockedDecision,
  blockLeft,
  chargeStep,
  UNCHANGED,
} from '@sluice/core/adapter';
import type { StateReader } from './state-reader.js';
import type { StateWriter } from './state-txn.js';

/**
 * Each `Store` operation over the states of a batch of limits, as one step inside a write
 * transaction (a StateTxn): sluice-server's `SL.*` commands and HostStore run the same steps, so
 * a decision is the same whichever of them makes it.
 */

/** A batch of limits and where their states are, at one time. */
export interface StateBatch {
  readonly calls: readonly LimitCall[];
  /** Where `calls[i]`'s state is stored (stored-key.ts). */
  readonly ids: readonly string[];
  /** Where `calls[i]`'s block record is (only for a call with `block`); absent when no call has one. */
  readonly blockIds?: readonly (string | undefined)[] | undefined;
  /** The decision's time: the caller's, or the store's clock. */
  readonly now: number;
  /** The store's clock, which expiry runs on (inside a transaction, StateTxn.now: read once LMDB's lock is held). */
  readonly storeNow: number;
}

/**
 * Stores `next` for a call (`undefined` deletes it), for as long as the algorithm says it matters
 * from the call's time `now` (a replayed time adds the store's replay grace: StateTxn.writeFrom).
 */
function writeState(tx: StateWriter, algorithm: Algorithm, id: string, next: unknown, now: number): void {
  tx.writeFrom(id, next, next === undefined ? 0 : algorithm.ttl(next, now), now);
}

/** The block records of the calls with a block (`undefined` where a call has none). */
function blocksOf(
  reader: StateReader,
  blockIds: readonly (string | undefined)[] | undefined,
  storeNow: number,
): (BlockState | undefined)[] | undefined {
  return blockIds?.map((id) => (id === undefined ? undefined : (reader.read(id, storeNow) as BlockState)));
}

/** consume: the all-or-nothing step over the batch (core's batchStep), its writes made. */
export function checkIn(tx: StateWriter, { calls, ids, blockIds, now, storeNow }: StateBatch): Decision[] {
  const states = ids.map((id) => tx.read(id, storeNow));
  const step = batchStep(calls, states, now, blocksOf(tx, blockIds, storeNow));
  for (let i = 0; i < calls.length; i++) {
    const next = step.writes[i];
    if (next !== UNCHANGED) writeState(tx, calls[i]!.algorithm, ids[i]!, next, now);
    const block = step.blocks[i]!;
    if (block !== UNCHANGED) tx.writeFrom(blockIds![i]!, block.state, block.ttl, now);
  }
  return step.decisions;
}

/** consume of one plain limit (no shadow, no block): what checkIn answers for it, without the arrays. */
export function checkOneIn(
  tx: StateWriter,
  algorithm: Algorithm,
  id: string,
  cost: number,
  policy: string,
  now: number,
  storeNow: number,
): Decision {
  const state = tx.read(id, storeNow);
  const step = algorithm.consume(state, now, cost, policy);
  if (step.state !== state) writeState(tx, algorithm, id, step.state, now);
  return step.decision;
}

/** peek: each limit's decision as it stands (a block first), nothing written. */
export function peekIn(reader: StateReader, { calls, ids, blockIds, now, storeNow }: StateBatch): Decision[] {
  const blocks = blocksOf(reader, blockIds, storeNow);
  return calls.map((call, i) => {
    const left = blocks === undefined ? 0 : blockLeft(blocks[i], now);
    if (left > 0) return blockedDecision(call.algorithm.limit, left, call.policy);
    return call.algorithm.peek(reader.read(ids[i]!, storeNow), now, call.cost, call.policy);
  });
}

/** refund: each stored state given its units back (`Algorithm.refund`; a call without it is passed over). */
export function refundIn(tx: StateWriter, { calls, ids, now, storeNow }: StateBatch): void {
  calls.forEach((call, i) => {
    const state = tx.read(ids[i]!, storeNow);
    if (state === undefined || call.algorithm.refund === undefined) return;
    writeState(tx, call.algorithm, ids[i]!, call.algorithm.refund(state, now, call.cost), now);
  });
}

/** charge: up to each call's cost taken, never below zero (core's chargeStep); the units each took. */
export function chargeIn(tx: StateWriter, { calls, ids, now, storeNow }: StateBatch): number[] {
  return calls.map((call, i) => {
    const step = chargeStep(call, tx.read(ids[i]!, storeNow), now);
    if (step.state !== UNCHANGED) writeState(tx, call.algorithm, ids[i]!, step.state, now);
    return step.taken;
  });
}

/** reset: the keys deleted. */
export function resetIn(tx: StateWriter, ids: readonly string[], storeNow: number): void {
  for (const id of ids) tx.write(id, undefined, 0, storeNow);
}

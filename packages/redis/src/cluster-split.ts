import type { Decision } from '@sluice/core';
import type { LimitCall } from '@sluice/core/adapter';
import type { CallGate } from './call-gate.js';
import type { ScriptCommand } from './script-command.js';
import { hashSlot } from './slot.js';
import { callArgs, DECISION_WIDTH, pushCallArgs, readDecision } from './wire.js';

/** A batch's calls that share one hash slot, with their positions in the batch. */
export interface SlotGroup {
  readonly indices: number[];
  readonly keys: string[];
}

/** One slot of a split consume that admitted: what a refund needs to give it back. */
interface AdmittedSlot {
  readonly group: SlotGroup;
  readonly calls: readonly LimitCall[];
  /** The batch's reply: the `now` it consumed at (exact `%.17g`), decisions, then its journal. */
  readonly reply: readonly unknown[];
}

/** The keys of a batch grouped by Cluster hash slot, in the order of their first key. */
export function groupBySlot(keys: readonly string[]): Map<number, SlotGroup> {
  const groups = new Map<number, SlotGroup>();
  keys.forEach((key, i) => {
    const slot = hashSlot(key);
    let group = groups.get(slot);
    if (group === undefined) {
      group = { indices: [], keys: [] };
      groups.set(slot, group);
    }
    group.indices.push(i);
    group.keys.push(key);
  });
  return groups;
}

/** A peek or consume of a batch whose keys span several slots; `fail` answers by the policy. */
type SplitCall = (
  batch: ScriptCommand,
  calls: readonly LimitCall[],
  slots: readonly SlotGroup[],
  time: string,
  fail: () => Decision[] | Promise<Decision[]>,
) => Promise<Decision[]>;

/**
 * Layered limits whose keys span several Cluster hash slots: the batch script once per slot, in
 * parallel, each all-or-nothing within its slot; a consume that not every slot admitted gives back
 * what the admitting slots consumed (see the README for the exact guarantee).
 */
export class ClusterSplit {
  constructor(
    private readonly gate: CallGate,
    private readonly splitRefund: ScriptCommand,
  ) {}

  /** A peek: the batch script once per slot, in parallel. */
  readonly peek: SplitCall = (batch, calls, slots, time, fail) =>
    this.gate.run('peek', calls.length, () => this.peekSlots(batch, calls, slots, time), fail);

  /**
   * A consume. The refunds run after the consume's deadline, under their own: a slow refund must
   * not turn a refusal Redis already gave into the failure policy's answer (an admission, under
   * `'allow'`). A slot that failed is answered by the policy once the others are refunded; after a
   * timeout the policy answers at once and the refunds run in the background when the slots reply.
   */
  readonly consume: SplitCall = async (batch, calls, slots, time, fail) => {
    // Settle (never reject) once each admitting slot is refunded or its failure reported.
    const refunds: Promise<void>[] = [];
    const decisions = await this.gate.run(
      'consume',
      calls.length,
      () => this.splitConsume(batch, calls, slots, time, refunds),
      fail,
    );
    if (refunds.length > 0) await Promise.all(refunds);
    return decisions;
  };

  private async peekSlots(
    batch: ScriptCommand,
    calls: readonly LimitCall[],
    slots: readonly SlotGroup[],
    time: string,
  ): Promise<Decision[]> {
    const decisions = new Array<Decision>(calls.length);
    await Promise.all(
      slots.map(async (group) => {
        const groupCalls = group.indices.map((i) => calls[i]!);
        const reply = await batch(group.keys.length, ...group.keys, ...callArgs(groupCalls, time, 'peek'));
        group.indices.forEach((index, j) => {
          decisions[index] = readDecision(reply, 1 + j * DECISION_WIDTH, calls[index]!);
        });
      }),
    );
    return decisions;
  }

  /**
   * The batch script once per slot, in parallel, each all-or-nothing within its slot. When not
   * every slot admitted (one refused, or failed), each slot that admitted gets back exactly what it
   * consumed, at the `now` it consumed at (`SPLIT_REFUND_SCRIPT`: the previous value when
   * nobody wrote the key since, else `Algorithm.refund`), one round trip per slot, in parallel
   * (pushed to `refunds`); then its limits report as they stand (`peek`), as a one-slot batch
   * reports the limits that would have admitted a refused request.
   */
  private async splitConsume(
    batch: ScriptCommand,
    calls: readonly LimitCall[],
    slots: readonly SlotGroup[],
    time: string,
    refunds: Promise<void>[],
  ): Promise<Decision[]> {
    const decisions = new Array<Decision>(calls.length);
    const runs = await Promise.allSettled(
      slots.map(async (group): Promise<AdmittedSlot | undefined> => {
        const groupCalls = group.indices.map((i) => calls[i]!);
        const reply = await batch(group.keys.length, ...group.keys, ...callArgs(groupCalls, time, 'split'));
        let admitted = true;
        group.indices.forEach((index, j) => {
          const decision = readDecision(reply, 1 + j * DECISION_WIDTH, calls[index]!);
          decisions[index] = decision;
          // A shadow limit's refusal does not refuse the request: nothing to give back for it.
          if (!decision.allowed && calls[index]!.shadow !== true) admitted = false;
        });
        return admitted ? { group, calls: groupCalls, reply } : undefined;
      }),
    );
    let failed: PromiseRejectedResult | undefined;
    const admitted: AdmittedSlot[] = [];
    for (const run of runs) {
      if (run.status === 'rejected') failed ??= run;
      else if (run.value !== undefined) admitted.push(run.value);
    }
    if (admitted.length === slots.length) return decisions;
    for (const slot of admitted) refunds.push(this.refundSlot(slot, decisions));
    // A failed slot is answered by the failure policy, which counts this request its own way.
    if (failed !== undefined) throw failed.reason;
    return decisions;
  }

  /**
   * Gives back what one admitting slot consumed. Never rejects: a failure (or an open breaker) is
   * reported as `operation: 'rollback'` and the slot keeps the units until they drain; its
   * decisions then stay as consumed, which is how the slot stands.
   */
  private async refundSlot(slot: AdmittedSlot, decisions: Decision[]): Promise<void> {
    const { group, calls, reply: consumed } = slot;
    const args: (string | number)[] = [consumed[0] as string];
    for (const call of calls) pushCallArgs(args, call);
    const journal = 1 + calls.length * DECISION_WIDTH;
    for (let j = 0; j < calls.length; j++) {
      const at = journal + j * 3;
      const previous = consumed[at + 1];
      const next = consumed[at + 2];
      args.push(consumed[at] === 1 ? 1 : 0);
      args.push(typeof previous === 'string' ? 1 : 0, typeof previous === 'string' ? previous : '');
      args.push(typeof next === 'string' ? 1 : 0, typeof next === 'string' ? next : '');
    }
    const reply = await this.gate.compensate('rollback', group.keys.length, () =>
      this.splitRefund(group.keys.length, ...group.keys, ...args),
    );
    if (reply === undefined) return;
    group.indices.forEach((index, j) => {
      decisions[index] = readDecision(reply, 1 + j * DECISION_WIDTH, calls[j]!);
    });
  }
}

import type { Decision, LimitCall } from '@sluice/core';
import type { CallGate } from '@sluice/core/gate';
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
  readonly slot: number;
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
  slots: ReadonlyMap<number, SlotGroup>,
  time: string,
  fail: () => Decision[] | Promise<Decision[]>,
) => Promise<Decision[]>;

/** A slot's call the policy answered (its node away: breaker open, error or timeout). */
const AWAY = Symbol('away');

/**
 * Layered limits whose keys span several Cluster hash slots: the batch script once per slot, in
 * parallel, each all-or-nothing within its slot and through its own node's breaker; a consume that
 * not every slot admitted gives back what the admitting slots consumed (see the README for the
 * exact guarantee). When a slot's node is away, the whole call is the failure policy's: a
 * request's layered limits are decided by one store, all or nothing, never part in Redis and part
 * in the fallback (whose admissions could not be undone together).
 */
export class ClusterSplit {
  constructor(
    private readonly gate: CallGate,
    private readonly splitRefund: ScriptCommand,
  ) {}

  /** A peek: the batch script once per slot, in parallel. */
  readonly peek: SplitCall = async (batch, calls, slots, time, fail) => {
    if (this.anyAway(slots)) return fail();
    const decisions = new Array<Decision>(calls.length);
    const runs = await this.perSlot('peek', batch, calls, slots, time, (reply, { group }) => {
      group.indices.forEach((index, j) => {
        decisions[index] = readDecision(reply, 1 + j * DECISION_WIDTH, calls[index]!);
      });
      return true;
    });
    return runs.includes(AWAY) ? fail() : decisions;
  };

  /**
   * A consume: the batch script once per slot, in parallel, each all-or-nothing within its slot.
   * When not every slot admitted (one refused, or its node was away), each slot that admitted
   * gets back exactly what it consumed, at the `now` it consumed at (`SPLIT_REFUND_SCRIPT`: the
   * previous value when nobody wrote the key since, else `Algorithm.refund`), one round trip per
   * slot, in parallel; then its limits report as they stand (`peek`), as a one-slot batch reports
   * the limits that would have admitted a refused request. A slot whose node was away makes the
   * answer the failure policy's, once the others are given back. Each refund runs under its own
   * deadline: a slow refund must not turn a refusal Redis already gave into the policy's answer.
   */
  readonly consume: SplitCall = async (batch, calls, slots, time, fail) => {
    if (this.anyAway(slots)) return fail();
    const decisions = new Array<Decision>(calls.length);
    const runs = await this.perSlot(
      'consume',
      batch,
      calls,
      slots,
      time,
      (reply, run): AdmittedSlot | undefined => {
        let admitted = true;
        run.group.indices.forEach((index, j) => {
          const decision = readDecision(reply, 1 + j * DECISION_WIDTH, calls[index]!);
          decisions[index] = decision;
          // A shadow limit's refusal does not refuse the request: nothing to give back for it.
          if (!decision.allowed && calls[index]!.shadow !== true) admitted = false;
        });
        return admitted ? { ...run, reply } : undefined;
      },
    );
    const admitted = runs.filter((run): run is AdmittedSlot => run !== undefined && run !== AWAY);
    if (admitted.length === slots.size) return decisions;
    if (admitted.length > 0) await Promise.all(admitted.map((run) => this.refundSlot(run, decisions)));
    // A slot whose node was away: the failure policy answers, which counts this request its own way.
    return runs.includes(AWAY) ? fail() : decisions;
  };

  /**
   * The batch script once per slot, in parallel, each through its own node's breaker: `read` turns
   * a slot's reply into its answer; `AWAY` for a slot the policy answered (its node away).
   */
  private perSlot<T>(
    mode: 'peek' | 'consume',
    batch: ScriptCommand,
    calls: readonly LimitCall[],
    slots: ReadonlyMap<number, SlotGroup>,
    time: string,
    read: (reply: unknown[], run: Omit<AdmittedSlot, 'reply'>) => T,
  ): Promise<(T | typeof AWAY)[]> {
    return Promise.all(
      [...slots].map(([slot, group]) => {
        const groupCalls = group.indices.map((i) => calls[i]!);
        return this.gate.map<unknown[], T | typeof AWAY>(
          mode,
          groupCalls.length,
          () =>
            batch(
              group.keys.length,
              ...group.keys,
              ...callArgs(groupCalls, time, mode === 'peek' ? 'peek' : 'split'),
            ),
          (reply) => read(reply, { slot, group, calls: groupCalls }),
          (): typeof AWAY => AWAY,
          slot,
        );
      }),
    );
  }

  /** Whether a slot's node is known to be away (its breaker open): then no slot is asked. */
  private anyAway(slots: ReadonlyMap<number, SlotGroup>): boolean {
    for (const slot of slots.keys()) if (this.gate.away(slot)) return true;
    return false;
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
    const reply = await this.gate.compensate(
      'rollback',
      group.keys.length,
      () => this.splitRefund(group.keys.length, ...group.keys, ...args),
      slot.slot,
    );
    if (reply === undefined) return;
    group.indices.forEach((index, j) => {
      decisions[index] = readDecision(reply, 1 + j * DECISION_WIDTH, calls[j]!);
    });
  }
}

import type { Entry } from './local-table.js';
import { slotTag } from './slot-tags.js';

/** ms a key outlives its state: a node whose clock lags the writer's still reads it. */
export const KEY_GRACE = 60_000;
/** ms a node's ack key lives: a batch resent later than this after it was applied counts twice. */
export const ACK_TTL = 86_400_000;

/** The script call of one hash slot of one batch: sent again, as it is, until Redis answers it. */
export interface SyncGroup {
  readonly entries: Entry[];
  /** The ack key, then each entry's Redis key. */
  readonly keys: string[];
  /** The script's ARGV (see `scripts/sync-script.ts`). */
  readonly args: (string | number)[];
}

/**
 * The batch of the entries queued since the last send, numbered `seq`: one group per hash slot on
 * a Cluster (one group on a standalone Redis). Takes each entry's delta: from now on the entry
 * counts only what it consumes after this send.
 */
export function buildBatch(
  queued: readonly Entry[],
  requeue: (entry: Entry) => void,
  seq: number,
  now: number,
  ackBase: string,
  cluster: boolean,
): SyncGroup[] {
  const groups = new Map<number, SyncGroup>();
  for (const entry of queued) entry.queued = false;
  for (const entry of queued) {
    let group = groups.get(entry.slot);
    if (group === undefined) {
      const ack = cluster ? `${ackBase}{${slotTag(entry.slot)}}` : ackBase;
      group = { entries: [], keys: [ack], args: [seq, now, KEY_GRACE, ACK_TTL] };
      groups.set(entry.slot, group);
    }
    group.entries.push(entry);
    group.keys.push(entry.redisKey);
    const { rule } = entry.space;
    group.args.push(rule.code, entry.space.field, ...rule.params);
    if (entry.delta === undefined) group.args.push('');
    else for (const n of entry.delta) group.args.push(String(n));
    entry.delta = undefined;
    // Pulled again next cycle after a use: the view then holds what the others did meanwhile.
    if (--entry.pulls > 0) requeue(entry);
  }
  return [...groups.values()];
}

/** Reads one group's reply into its entries: each view becomes the fleet's state plus what was consumed since the send. */
export function applyReply(group: SyncGroup, reply: unknown): void {
  if (!Array.isArray(reply) || reply.length !== group.entries.length + 1) {
    throw new Error(`SyncedStore: unexpected sync reply ${JSON.stringify(reply)}`);
  }
  group.entries.forEach((entry, i) => {
    const raw = reply[i + 1] as string;
    const state = raw === '' ? undefined : decodeState(raw);
    entry.view = entry.delta === undefined ? state : entry.space.rule.merge(state, entry.delta);
  });
}

/** A state as `RedisStore` stores it: one number, or numbers joined by commas. */
function decodeState(raw: string): unknown {
  if (!raw.includes(',')) return Number(raw);
  return raw.split(',').map(Number);
}

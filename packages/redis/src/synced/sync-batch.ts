import type { Entry, Space } from './local-table.js';
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
 * Entries per script call at most. A call's keys and arguments are spread into function calls on
 * the way to the socket (ours, the client's), and V8 overflows its stack at about 120,000
 * arguments: a cycle over more keys than that failed every time, for good. Each chunk has its own
 * ack key (the node's, the chunk's number, the slot's tag), so a chunk sent again is applied once.
 */
export const CHUNK = 4096;

/** A group being built: its limits (spaces) are listed once, each entry names one by index. */
interface Building {
  readonly group: SyncGroup;
  readonly spaces: Map<Space, number>;
  /** Each space's rule code, field and params, in index order. */
  readonly header: (string | number)[];
  /** One argument per entry: its space's index, then its delta, comma-joined. */
  readonly specs: string[];
}

/**
 * The batch of the entries queued since the last send, numbered `seq`: one group per hash slot on
 * a Cluster (one group on a standalone Redis). Takes each entry's delta: from now on the entry
 * counts only what it consumes after this send.
 *
 * One argument per entry (its limit's index and its delta, packed), the limits' rule codes,
 * fields and params once per group: the client's cost per synced key is mostly per argument
 * (ioredis converts and writes each one), and a field (the limit's fingerprint) is the longest.
 */
export function buildBatch(
  queued: readonly Entry[],
  requeue: (entry: Entry) => void,
  seq: number,
  now: number,
  ackBase: string,
  cluster: boolean,
): SyncGroup[] {
  /** The chunk being filled per hash slot, and every chunk made. */
  const open = new Map<number, Building>();
  const chunks: Building[] = [];
  const chunksOf = new Map<number, number>();
  for (const entry of queued) entry.queued = false;
  for (const entry of queued) {
    let building = open.get(entry.slot);
    if (building === undefined || building.group.entries.length >= CHUNK) {
      const chunk = chunksOf.get(entry.slot) ?? 0;
      chunksOf.set(entry.slot, chunk + 1);
      // The first chunk keeps the node's ack key of earlier versions; the others add their number.
      const base = chunk === 0 ? ackBase : `${ackBase}${chunk}:`;
      const ack = cluster ? `${base}{${slotTag(entry.slot)}}` : base;
      building = {
        group: { entries: [], keys: [ack], args: [] },
        spaces: new Map(),
        header: [],
        specs: [],
      };
      open.set(entry.slot, building);
      chunks.push(building);
    }
    const { space } = entry;
    let index = building.spaces.get(space);
    if (index === undefined) {
      index = building.spaces.size + 1;
      building.spaces.set(space, index);
      building.header.push(space.rule.code, space.field, ...space.rule.params);
    }
    building.group.entries.push(entry);
    building.group.keys.push(entry.redisKey);
    building.specs.push(entry.delta === undefined ? `${index}` : `${index},${entry.delta.join(',')}`);
    entry.delta = undefined;
    // Pulled again next cycle after a use: the view then holds what the others did meanwhile.
    if (--entry.pulls > 0) requeue(entry);
  }
  return chunks.map(({ group, spaces, header, specs }) => {
    group.args.push(seq, now, KEY_GRACE, ACK_TTL, spaces.size, ...header);
    for (const spec of specs) group.args.push(spec);
    return group;
  });
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

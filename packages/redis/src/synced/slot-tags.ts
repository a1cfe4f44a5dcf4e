import { hashSlot, SLOTS } from '../slot.js';

let tags: string[] | undefined;

/**
 * A short hash tag whose key lands in `slot` (`hashSlot('{' + tag + '}') === slot`): a node's ack
 * key must share the slot of the keys its script touches on a Cluster. The table is found once
 * per process by trying the decimal numbers in order (about 170,000 CRC16s, a few ms).
 */
export function slotTag(slot: number): string {
  if (tags === undefined) {
    const found: string[] = new Array<string>(SLOTS);
    let left = SLOTS;
    for (let i = 0; left > 0; i++) {
      const tag = i.toString(36);
      const s = hashSlot(`{${tag}}`);
      if (found[s] === undefined) {
        found[s] = tag;
        left--;
      }
    }
    tags = found;
  }
  return tags[slot]!;
}

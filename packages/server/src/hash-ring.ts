import { createHash } from 'node:crypto';

/** Points each node places on the ring: enough that each of a few servers owns close to its share. */
export const VIRTUAL_NODES = 160;

/** A 32-bit position on the ring: the first 4 bytes of the key's MD5 (well spread, fast enough per call). */
function position(text: string): number {
  return createHash('md5').update(text).digest().readUInt32BE(0);
}

/**
 * Consistent hashing (Karger et al.): each node names {@link VIRTUAL_NODES} points on a 32-bit
 * ring, a key belongs to the first point at or after its own position. Points depend only on a
 * node's name, so adding a node moves only the keys it now owns (about 1/(n+1) of them) and
 * removing one moves only the keys it owned; every other key stays where it was.
 */
export class HashRing<T> {
  private readonly points: Uint32Array;
  private readonly owners: T[];

  constructor(nodes: readonly { readonly name: string; readonly node: T }[]) {
    const placed: { at: number; node: T }[] = [];
    for (const { name, node } of nodes) {
      for (let v = 0; v < VIRTUAL_NODES; v++) placed.push({ at: position(`${name}#${v}`), node });
    }
    placed.sort((a, b) => a.at - b.at);
    this.points = Uint32Array.from(placed, (p) => p.at);
    this.owners = placed.map((p) => p.node);
  }

  /** The node owning `key`. */
  nodeFor(key: string): T {
    const at = position(key);
    let lo = 0;
    let hi = this.points.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.points[mid]! < at) lo = mid + 1;
      else hi = mid;
    }
    return this.owners[lo === this.points.length ? 0 : lo]!;
  }
}

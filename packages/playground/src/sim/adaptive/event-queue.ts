/** A binary min-heap of timed events; ties keep their insertion order (a stable run for a seed). */
export class EventQueue<E> {
  private readonly heap: { at: number; seq: number; event: E }[] = [];
  private seq = 0;

  get size(): number {
    return this.heap.length;
  }

  push(at: number, event: E): void {
    const heap = this.heap;
    heap.push({ at, seq: this.seq++, event });
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(i, parent)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  /** The earliest event and its time; `undefined` when empty. */
  pop(): { at: number; event: E } | undefined {
    const heap = this.heap;
    const top = heap[0];
    if (top === undefined) return undefined;
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && this.less(l, m)) m = l;
        if (r < heap.length && this.less(r, m)) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m]!, heap[i]!];
        i = m;
      }
    }
    return { at: top.at, event: top.event };
  }

  private less(a: number, b: number): boolean {
    const x = this.heap[a]!;
    const y = this.heap[b]!;
    return x.at < y.at || (x.at === y.at && x.seq < y.seq);
  }
}

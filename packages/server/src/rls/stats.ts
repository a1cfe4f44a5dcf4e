/**
 * The per-descriptor counters envoyproxy/ratelimit keeps (its `ratelimit.service.rate_limit.<key>.*`
 * stats), by the same stats key (config path, or request values with detailed_metric /
 * value_to_metric): hits, over the limit, near it (past `nearLimitRatio` of it), within it, and
 * over it but let through by shadow mode. Plain counters, read with `snapshot()`.
 */
export interface DescriptorCounters {
  totalHits: number;
  overLimit: number;
  nearLimit: number;
  withinLimit: number;
  shadowMode: number;
}

/** What one descriptor's verdict adds, from its counts before and after the request. */
export interface Outcome {
  readonly limit: number;
  /** Units counted before this request (limit − remaining before). */
  readonly before: number;
  readonly hits: number;
  readonly over: boolean;
  readonly shadow: boolean;
}

export class RlsStats {
  private readonly counters = new Map<string, DescriptorCounters>();
  /** Stats keys not kept once `maxKeys` were (detailed_metric can mint one per client). */
  droppedKeys = 0;

  constructor(
    private readonly nearLimitRatio: number,
    private readonly maxKeys: number,
  ) {}

  private of(key: string): DescriptorCounters | undefined {
    let c = this.counters.get(key);
    if (c === undefined) {
      if (this.counters.size >= this.maxKeys) {
        this.droppedKeys++;
        return undefined;
      }
      c = { totalHits: 0, overLimit: 0, nearLimit: 0, withinLimit: 0, shadowMode: 0 };
      this.counters.set(key, c);
    }
    return c;
  }

  /** A descriptor that matched nothing still counts its hits nowhere (as there). */
  record(key: string, o: Outcome): void {
    const c = this.of(key);
    if (c === undefined) return;
    const { limit, before, hits } = o;
    const after = before + hits;
    const near = Math.floor(limit * this.nearLimitRatio);
    c.totalHits += hits;
    if (o.over) {
      if (before >= limit) c.overLimit += hits;
      else {
        c.overLimit += after - limit;
        c.nearLimit += limit - Math.max(near, before);
      }
      if (o.shadow) c.shadowMode += before >= limit ? hits : after - limit;
      return;
    }
    if (after > near) c.nearLimit += before >= near ? hits : after - near;
    c.withinLimit += hits;
  }

  /** An unlimited descriptor: its hits, nothing else. */
  hit(key: string, hits: number): void {
    const c = this.of(key);
    if (c !== undefined) c.totalHits += hits;
  }

  snapshot(): Record<string, DescriptorCounters> {
    const out: Record<string, DescriptorCounters> = {};
    for (const [key, c] of this.counters) out[key] = { ...c };
    return out;
  }
}

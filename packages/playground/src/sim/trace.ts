/**
 * A trace: the requests a server receives, in time order. Columns in typed arrays rather than one
 * object per request, so a million requests cost 17 MB and no garbage collection while they are
 * simulated; keys are indices into `names` (a client's key is written once, however many requests
 * it sends).
 */
export interface Trace {
  /** Requests in the trace. */
  readonly length: number;
  /** Each request's time, ms (any origin: epoch-aligned windows align to 0). Non-decreasing. */
  readonly times: Float64Array;
  /** Each request's key, as an index into `names`. */
  readonly keys: Uint32Array;
  /** Each request's cost: an integer ≥ 1. */
  readonly costs: Uint32Array;
  /** The distinct keys, in order of first appearance. */
  readonly names: readonly string[];
}

/** An error in a trace or traffic description, with the 1-based CSV line when there is one. */
export class TraceError extends Error {
  override readonly name = 'TraceError';
  readonly line: number | undefined;
  constructor(message: string, line?: number) {
    super(line === undefined ? message : `line ${line}: ${message}`);
    this.line = line;
  }
}

/** Collects requests in any order, then sorts them (stably) into a Trace. */
export class TraceBuilder {
  private times = new Float64Array(1024);
  private keys = new Uint32Array(1024);
  private costs = new Uint32Array(1024);
  private count = 0;
  private sorted = true;
  private readonly names: string[] = [];
  private readonly index = new Map<string, number>();

  /** The index of a key, added on first use. */
  key(name: string): number {
    let i = this.index.get(name);
    if (i === undefined) {
      i = this.names.length;
      this.names.push(name);
      this.index.set(name, i);
    }
    return i;
  }

  /**
   * Makes room for `more` requests at once: growing by doubling costs a browser far more than it
   * costs Node (each large typed array is a fresh allocation), so generators say what they need.
   */
  reserve(more: number): void {
    if (this.count + more > this.times.length) this.resize(this.count + more);
  }

  /** Appends one request; `key` from `key(name)`. */
  push(time: number, key: number, cost: number): void {
    if (this.count === this.times.length) this.resize(this.times.length * 2);
    if (this.count > 0 && time < this.times[this.count - 1]!) this.sorted = false;
    this.times[this.count] = time;
    this.keys[this.count] = key;
    this.costs[this.count] = cost;
    this.count++;
  }

  get size(): number {
    return this.count;
  }

  /** The trace; the builder must not be used after (the trace views its arrays, no copy). */
  build(): Trace {
    const n = this.count;
    let times = this.times.subarray(0, n);
    let keys = this.keys.subarray(0, n);
    let costs = this.costs.subarray(0, n);
    if (!this.sorted) {
      // A server sees requests in arrival order; equal times keep the order they were given in.
      const order = new Uint32Array(n);
      for (let i = 0; i < n; i++) order[i] = i;
      const t = times;
      order.sort((a, b) => t[a]! - t[b]! || a - b);
      times = Float64Array.from(order, (i) => t[i]!);
      const k = keys;
      keys = Uint32Array.from(order, (i) => k[i]!);
      const c = costs;
      costs = Uint32Array.from(order, (i) => c[i]!);
    }
    return { length: n, times, keys, costs, names: this.names.slice() };
  }

  private resize(size: number): void {
    const times = new Float64Array(size);
    times.set(this.times);
    this.times = times;
    const keys = new Uint32Array(size);
    keys.set(this.keys);
    this.keys = keys;
    const costs = new Uint32Array(size);
    costs.set(this.costs);
    this.costs = costs;
  }
}

/** The header line `parseCsv` accepts and `toCsv` writes. */
export const CSV_HEADER = 'time,key,cost';

/**
 * Reads `time,key,cost` lines: time in ms, the client's key, and the request's cost (an integer
 * ≥ 1; the column may be left out for 1). The key is everything between the first and the last
 * comma, so a key may hold commas when the cost is given. An optional header line, blank lines and
 * lines starting with `#` are skipped. Rows may come in any order: they are sorted by time.
 */
export function parseCsv(text: string, into: TraceBuilder = new TraceBuilder()): TraceBuilder {
  const lines = text.split(/\r?\n/);
  const header = firstContentLine(lines);
  into.reserve(lines.length);
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (n === header && /^time\s*,/i.test(line)) continue;
    const first = line.indexOf(',');
    if (first < 0) throw new TraceError(`expected time,key,cost; got ${JSON.stringify(line)}`, n + 1);
    const last = line.lastIndexOf(',');
    const time = Number(line.slice(0, first));
    if (line.slice(0, first).trim() === '' || !Number.isFinite(time)) {
      throw new TraceError(
        `time must be a finite number of ms; got ${JSON.stringify(line.slice(0, first))}`,
        n + 1,
      );
    }
    let key: string;
    let cost = 1;
    if (last === first) {
      key = line.slice(first + 1).trim();
    } else {
      key = line.slice(first + 1, last).trim();
      const text = line.slice(last + 1).trim();
      cost = Number(text);
      if (text === '' || !Number.isInteger(cost) || cost < 1 || cost > 0xffffffff) {
        throw new TraceError(`cost must be an integer ≥ 1; got ${JSON.stringify(text)}`, n + 1);
      }
    }
    if (key === '') throw new TraceError('key must not be empty', n + 1);
    into.push(time, into.key(key), cost);
  }
  return into;
}

function firstContentLine(lines: readonly string[]): number {
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n]!.trim();
    if (line !== '' && !line.startsWith('#')) return n;
  }
  return -1;
}

/** The trace as `time,key,cost` CSV, with a header line (what `parseCsv` reads back). */
export function toCsv(trace: Trace): string {
  const rows = [CSV_HEADER];
  for (let i = 0; i < trace.length; i++) {
    rows.push(`${trace.times[i]},${trace.names[trace.keys[i]!]},${trace.costs[i]}`);
  }
  return `${rows.join('\n')}\n`;
}

/** Index of the last request at or before `time` (-1 when there is none). */
export function requestAt(trace: Trace, time: number): number {
  let lo = 0;
  let hi = trace.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (trace.times[mid]! <= time) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

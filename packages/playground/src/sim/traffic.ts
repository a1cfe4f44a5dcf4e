import { parseDuration } from '@sluice/core/adapter';
import { parseCsv, type Trace, TraceBuilder, TraceError } from './trace.js';

/** The traffic patterns a trace can be made of. */
export const PATTERNS = ['steady', 'bursts', 'ramp', 'boundary', 'clients', 'cost', 'csv'] as const;
export type PatternName = (typeof PATTERNS)[number];

/**
 * One source of traffic: a pattern and its parameters, flat, as in the URL and in a config file
 * (`{ "pattern": "steady", "rate": 50, "duration": "10s" }`). A trace is the union of its sources.
 */
export type TrafficSpec = { readonly pattern: PatternName } & Readonly<Record<string, string | number>>;

/** How a parameter is read: a number, a whole number, a duration (ms or `'1s'`…), or text. */
export type ParamKind = 'number' | 'integer' | 'duration' | 'text';

export interface ParamSpec {
  readonly name: string;
  readonly kind: ParamKind;
  readonly default: string | number;
  /** Shown beside the field on the page and in `--help`. */
  readonly help: string;
}

/** Parameters every generated pattern has (keys, costs, start, seed), after its own. */
export const COMMON_PARAMS: readonly ParamSpec[] = [
  {
    name: 'key',
    kind: 'text',
    default: 'client',
    help: 'key of the client (numbered when there are several)',
  },
  { name: 'clients', kind: 'integer', default: 1, help: 'clients (keys), taking turns' },
  { name: 'cost', kind: 'integer', default: 1, help: 'cost of each request' },
  {
    name: 'maxCost',
    kind: 'integer',
    default: 0,
    help: 'when above cost: costs drawn between cost and maxCost',
  },
  { name: 'start', kind: 'duration', default: 0, help: 'when the source starts' },
  { name: 'seed', kind: 'integer', default: 1, help: 'seed of the random draws' },
];

const DURATION: ParamSpec = { name: 'duration', kind: 'duration', default: '10s', help: 'how long it lasts' };

/** Every pattern's own parameters (then the common ones; `csv` has only its text). */
export const PATTERN_PARAMS: Readonly<Record<PatternName, readonly ParamSpec[]>> = {
  steady: [
    { name: 'rate', kind: 'number', default: 20, help: 'requests per second, evenly spaced' },
    DURATION,
  ],
  bursts: [
    { name: 'size', kind: 'integer', default: 30, help: 'requests per burst' },
    { name: 'every', kind: 'duration', default: '2s', help: 'time between bursts' },
    {
      name: 'spread',
      kind: 'duration',
      default: 0,
      help: 'each burst spread over this time (0: one instant)',
    },
    DURATION,
  ],
  ramp: [
    { name: 'from', kind: 'number', default: 0, help: 'requests per second at the start' },
    { name: 'to', kind: 'number', default: 60, help: 'requests per second at the end' },
    DURATION,
  ],
  boundary: [
    { name: 'window', kind: 'duration', default: '1s', help: 'the fixed window attacked (epoch-aligned)' },
    {
      name: 'count',
      kind: 'integer',
      default: 10,
      help: 'requests just before and again just after a boundary',
    },
    { name: 'spread', kind: 'duration', default: '50ms', help: 'each half is spread over this time' },
    { name: 'repeat', kind: 'integer', default: 3, help: 'boundaries attacked' },
    { name: 'gap', kind: 'integer', default: 3, help: 'windows from one attacked boundary to the next' },
  ],
  clients: [
    { name: 'clients', kind: 'integer', default: 5, help: 'well-behaved clients, random (Poisson) arrivals' },
    { name: 'rate', kind: 'number', default: 5, help: 'requests per second of each client' },
    {
      name: 'abusive',
      kind: 'number',
      default: 40,
      help: 'requests per second of one more client, "abuser"',
    },
    DURATION,
  ],
  cost: [
    { name: 'rate', kind: 'number', default: 20, help: 'requests per second, evenly spaced' },
    { name: 'maxCost', kind: 'integer', default: 10, help: 'costs drawn between cost and maxCost' },
    DURATION,
  ],
  csv: [{ name: 'text', kind: 'text', default: '', help: 'time,key,cost lines (time in ms)' }],
};

/** The parameters a pattern reads, its own first (a pattern's own default wins over a common one). */
export function paramsOf(pattern: PatternName): readonly ParamSpec[] {
  const own = PATTERN_PARAMS[pattern];
  if (pattern === 'csv') return own;
  return [...own, ...COMMON_PARAMS.filter((c) => !own.some((p) => p.name === c.name))];
}

/** The most requests a trace may hold: past it, a typo (rate 1e9) would hang the page. */
export const MAX_REQUESTS = 5_000_000;

/** Makes the trace of these sources (their union, sorted by time). Deterministic for a given seed. */
export function makeTrace(sources: readonly TrafficSpec[]): Trace {
  if (sources.length === 0) throw new TraceError('traffic needs at least one source');
  const builder = new TraceBuilder();
  sources.forEach((source, i) => {
    addSource(builder, source, i);
  });
  if (builder.size === 0) throw new TraceError('the traffic has no request');
  if (builder.size > MAX_REQUESTS) {
    throw new TraceError(
      `the traffic makes ${builder.size} requests; at most ${MAX_REQUESTS.toLocaleString('en')}`,
    );
  }
  return builder.build();
}

function addSource(builder: TraceBuilder, source: TrafficSpec, index: number): void {
  const where = `traffic[${index}]`;
  if (!(PATTERNS as readonly string[]).includes(source.pattern)) {
    throw new TraceError(
      `${where}.pattern must be one of ${PATTERNS.join(', ')}; got ${JSON.stringify(source.pattern)}`,
    );
  }
  const known = paramsOf(source.pattern).map((p) => p.name);
  for (const name of Object.keys(source)) {
    if (name !== 'pattern' && !known.includes(name)) {
      throw new TraceError(
        `${where}: ${source.pattern} has no parameter ${JSON.stringify(name)} (it has ${known.join(', ')})`,
      );
    }
  }
  const p = new Params(source, where);
  if (source.pattern === 'csv') {
    parseCsv(p.text('text'), builder);
    return;
  }
  const emit = emitter(builder, p);
  const start = p.duration('start', true);
  switch (source.pattern) {
    case 'steady':
    case 'cost': {
      const rate = p.positive('rate');
      const count = budget(Math.floor((p.duration('duration') * rate) / 1000), where);
      builder.reserve(count);
      for (let i = 0; i < count; i++) emit(start + (i * 1000) / rate, i);
      return;
    }
    case 'bursts': {
      const size = p.integer('size');
      const every = p.duration('every');
      const spread = p.duration('spread', true);
      const duration = p.duration('duration');
      builder.reserve(budget(Math.ceil(duration / every) * size, where));
      let n = 0;
      for (let at = 0; at < duration; at += every) {
        for (let i = 0; i < size; i++) emit(start + at + (size > 1 ? (i * spread) / size : 0), n++);
      }
      return;
    }
    case 'ramp': {
      const from = p.number('from', 0);
      const to = p.number('to', 0);
      const duration = p.duration('duration');
      builder.reserve(budget(Math.ceil((((from + to) / 2) * duration) / 1000) + 1, where));
      // Arrivals at the rate of the moment: the integral of the rate grows by one per request.
      let n = 0;
      for (let t = 0; t < duration; ) {
        const rate = from + ((to - from) * t) / duration;
        if (rate <= 0) {
          // Jump to where the rate first gives one request in the next step.
          t += Math.max(1, duration / 1000);
          continue;
        }
        emit(start + t, n++);
        t += 1000 / rate;
      }
      return;
    }
    case 'boundary': {
      const window = p.duration('window');
      const count = p.integer('count');
      const spread = p.duration('spread', true);
      const repeat = p.integer('repeat');
      const gap = p.integer('gap');
      builder.reserve(budget(2 * count * repeat, where));
      let n = 0;
      for (let r = 0; r < repeat; r++) {
        // Epoch-aligned boundaries, as the fixed window's; the first one after `start`.
        const boundary = (Math.floor(start / window) + 1 + r * gap) * window;
        for (let i = 0; i < count; i++) emit(boundary - spread + (i * spread) / count, n++);
        for (let i = 0; i < count; i++) emit(boundary + (i * spread) / count, n++);
      }
      return;
    }
    case 'clients': {
      const clients = p.integer('clients', 0);
      const rate = p.number('rate', 0);
      const abusive = p.number('abusive', 0);
      const duration = p.duration('duration');
      // Poisson counts vary: reserve the mean, doubling covers the rest.
      builder.reserve(budget(Math.ceil(((clients * rate + abusive) * duration) / 1000), where));
      const key = p.text('key');
      const random = mulberry32(p.integer('seed', 0));
      const cost = costs(p, random);
      const poisson = (name: string, perSecond: number) => {
        if (perSecond <= 0) return;
        const k = builder.key(name);
        for (let t = (-Math.log(1 - random()) * 1000) / perSecond; t < duration; ) {
          builder.push(start + t, k, cost());
          t += (-Math.log(1 - random()) * 1000) / perSecond;
        }
      };
      for (let c = 0; c < clients; c++) poisson(clients === 1 ? key : `${key}-${c + 1}`, rate);
      poisson('abuser', abusive);
      if (builder.size > MAX_REQUESTS) throw new TraceError(`${where}: more than ${MAX_REQUESTS} requests`);
      return;
    }
  }
}

/** Throws when a source would make more requests than a page can hold. */
function budget(count: number, where: string): number {
  if (!(count <= MAX_REQUESTS)) {
    throw new TraceError(
      `${where} would make ${count} requests; at most ${MAX_REQUESTS.toLocaleString('en')}`,
    );
  }
  return count;
}

/** Pushes the n-th request of a source at a time: its key taken in turn, its cost drawn. */
function emitter(builder: TraceBuilder, p: Params): (time: number, n: number) => void {
  const clients = p.integer('clients');
  const key = p.text('key');
  const keys = Array.from({ length: clients }, (_, c) =>
    builder.key(clients === 1 ? key : `${key}-${c + 1}`),
  );
  const cost = costs(p, mulberry32(p.integer('seed', 0)));
  return (time, n) => builder.push(time, keys[n % clients]!, cost());
}

function costs(p: Params, random: () => number): () => number {
  const low = p.integer('cost');
  const high = p.integer('maxCost', 0);
  if (high <= low) return () => low;
  const span = high - low + 1;
  return () => low + Math.floor(random() * span);
}

/** A small, fast, seedable PRNG (Tommy Ettinger's mulberry32): the same seed gives the same trace everywhere. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A source's parameters, read with their defaults and checked, each error naming the parameter. */
class Params {
  private readonly specs: readonly ParamSpec[];
  constructor(
    private readonly source: TrafficSpec,
    private readonly where: string,
  ) {
    this.specs = paramsOf(source.pattern);
  }

  private raw(name: string): string | number {
    const value = this.source[name];
    if (value !== undefined && value !== '') return value;
    return this.specs.find((p) => p.name === name)!.default;
  }

  /** A finite number ≥ `min`. */
  number(name: string, min: number): number {
    const raw = this.raw(name);
    const value = typeof raw === 'number' ? raw : Number(raw);
    if ((typeof raw === 'string' && raw.trim() === '') || !Number.isFinite(value) || value < min) {
      throw new TraceError(`${this.where}.${name} must be a number ≥ ${min}; got ${JSON.stringify(raw)}`);
    }
    return value;
  }

  positive(name: string): number {
    const value = this.number(name, 0);
    if (value === 0) throw new TraceError(`${this.where}.${name} must be above 0; got 0`);
    return value;
  }

  integer(name: string, min = 1): number {
    const value = this.number(name, min);
    if (!Number.isInteger(value))
      throw new TraceError(`${this.where}.${name} must be a whole number; got ${value}`);
    return value;
  }

  /** ms; `zero` allows 0 (a start, a spread), which core's durations refuse. */
  duration(name: string, zero = false): number {
    const raw = this.raw(name);
    if (zero && (raw === 0 || raw === '0')) return 0;
    try {
      return parseDuration(
        `${this.where}.${name}`,
        typeof raw === 'string' && /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw,
      );
    } catch (error) {
      throw new TraceError((error as Error).message);
    }
  }

  text(name: string): string {
    return String(this.raw(name));
  }
}

import {
  type Algorithm,
  type AlgorithmKind,
  ErrorCode,
  fixedWindow,
  type GcraOptions,
  gcra,
  type LeakyBucketQueueOptions,
  leakyBucketQueue,
  type SlidingWindowCounterOptions,
  SluiceError,
  slidingWindowCounter,
  slidingWindowLog,
  type TokenBucketOptions,
  tokenBucket,
} from '@sluice/core';
import { ALGORITHM_KINDS, type AlgorithmParam, isAlgorithmKind } from '@sluice/core/adapter';

/**
 * An algorithm on the wire: `kind:param=value,...` with core's parameter names and values as
 * `algorithm.params` holds them (`token-bucket:capacity=10,refillAmount=10,refillInterval=1000,
 * stepped=0,strict=0`). Params left out take core's defaults, and a duration may be written as
 * core reads it (`refillInterval=1s`), so it also reads well typed into redis-cli.
 */
type Params = Record<string, string>;
/** The wire params of one kind, by core's names for them. */
type KindParams<K extends AlgorithmKind> = Partial<Record<AlgorithmParam<K>, string>>;

const num = (value: string | undefined): number | undefined =>
  value === undefined ? undefined : Number(value);
const duration = (value: string | undefined): number | string | undefined =>
  value === undefined ? undefined : /^[0-9.]+$/.test(value) ? Number(value) : value;
const flag = (name: string, value: string | undefined): boolean | undefined => {
  if (value === undefined) return undefined;
  if (value === '1' || value === 'true') return true;
  if (value === '0' || value === 'false') return false;
  throw new SluiceError(ErrorCode.INVALID_OPTION, `${name} must be 0 or 1; got ${JSON.stringify(value)}`, {
    option: name,
    value,
  });
};

/** Defined values only: core's options reject an explicit `undefined` nowhere, but keep them clean. */
function defined<T>(options: { [K in keyof T]?: T[K] | undefined }): T {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as T;
}

/**
 * From wire params to core's factory, per kind of core's `ALGORITHM_KINDS` (a kind without an entry
 * is a compile error); the names each accepts, its `params`, are checked first.
 */
const FACTORIES: { readonly [K in AlgorithmKind]: (p: KindParams<K>) => Algorithm } = {
  'token-bucket': (p) => {
    const stepped = flag('stepped', p.stepped);
    return tokenBucket(
      defined<TokenBucketOptions>({
        capacity: num(p.capacity) as number,
        refillAmount: num(p.refillAmount),
        refillInterval: duration(p.refillInterval) as number,
        refill: stepped === undefined ? undefined : stepped ? ('stepped' as const) : ('continuous' as const),
        strict: flag('strict', p.strict),
      }),
    );
  },
  gcra: (p) =>
    gcra(
      defined<GcraOptions>({
        rate: num(p.rate) as number,
        period: duration(p.period) as number,
        burst: num(p.burst),
      }),
    ),
  'fixed-window': (p) => fixedWindow({ limit: num(p.limit) as number, window: duration(p.window) as number }),
  'sliding-window-log': (p) =>
    slidingWindowLog({ limit: num(p.limit) as number, window: duration(p.window) as number }),
  'sliding-window-counter': (p) =>
    slidingWindowCounter(
      defined<SlidingWindowCounterOptions>({
        limit: num(p.limit) as number,
        window: duration(p.window) as number,
        precision: num(p.precision),
      }),
    ),
  'leaky-bucket-queue': (p) => {
    // params.maxDelay 0 stands for "no bound" (Infinity does not travel as a number).
    const maxDelay = duration(p.maxDelay);
    return leakyBucketQueue(
      defined<LeakyBucketQueueOptions>({
        rate: num(p.rate) as number,
        period: duration(p.period) as number,
        burst: num(p.burst),
        queue: num(p.queue),
        maxDelay: maxDelay === 0 ? undefined : (maxDelay as number),
      }),
    );
  },
};

/** The wire form of an algorithm (what `ServerStore` sends). */
export function specOf(algorithm: Algorithm): string {
  // An algorithm's params never change: its spec is built once, not on every call of ServerStore.
  let spec = specs.get(algorithm);
  if (spec === undefined) {
    spec = `${algorithm.kind}:${Object.entries(algorithm.params)
      .map(([name, value]) => `${name}=${value}`)
      .join(',')}`;
    specs.set(algorithm, spec);
  }
  return spec;
}

const specs = new WeakMap<Algorithm, string>();

const cache = new Map<string, Algorithm>();

/** The algorithm a spec names, validated by core's own factory (a SluiceError when it is bad). */
export function algorithmOf(spec: string): Algorithm {
  const cached = cache.get(spec);
  if (cached !== undefined) return cached;
  const colon = spec.indexOf(':');
  const kind = colon < 0 ? spec : spec.slice(0, colon);
  if (!isAlgorithmKind(kind)) {
    throw new SluiceError(
      ErrorCode.UNKNOWN_ALGORITHM,
      `unknown algorithm ${JSON.stringify(kind)}; known: ${Object.keys(ALGORITHM_KINDS).join(', ')}`,
      { value: kind },
    );
  }
  const names: readonly string[] = ALGORITHM_KINDS[kind].params;
  const params: Params = {};
  for (const pair of colon < 0 || colon === spec.length - 1 ? [] : spec.slice(colon + 1).split(',')) {
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    if (eq < 0 || !names.includes(name) || Object.hasOwn(params, name)) {
      throw new SluiceError(
        ErrorCode.UNKNOWN_OPTION,
        `${kind}: bad parameter ${JSON.stringify(pair)}; accepted: ${names.map((n) => `${n}=…`).join(', ')}`,
        { option: name },
      );
    }
    params[name] = pair.slice(eq + 1);
  }
  const algorithm = (FACTORIES[kind] as (p: Params) => Algorithm)(params);
  if (cache.size >= 10_000) cache.clear();
  cache.set(spec, algorithm);
  return algorithm;
}

/**
 * The built-in algorithms, declared once. Each kind names its factory and its `params`, in the
 * order the algorithm's `params` object holds them (the fingerprint hashes them in that order,
 * and the Redis scripts read them in an order drawn from these names). The `AlgorithmKind` union,
 * the error messages that list the kinds, the Redis Lua table (`Record<AlgorithmKind, …>` in
 * `@sluice/redis`) and the server's wire spec are derived from it, so a kind added here is a
 * compile error everywhere it is not yet implemented.
 */
export const ALGORITHM_KINDS = {
  'token-bucket': {
    factory: 'tokenBucket',
    params: ['capacity', 'refillAmount', 'refillInterval', 'stepped', 'strict'],
  },
  gcra: { factory: 'gcra', params: ['rate', 'period', 'burst'] },
  'fixed-window': { factory: 'fixedWindow', params: ['limit', 'window'] },
  'sliding-window-log': { factory: 'slidingWindowLog', params: ['limit', 'window'] },
  'sliding-window-counter': { factory: 'slidingWindowCounter', params: ['limit', 'window', 'precision'] },
  'leaky-bucket-queue': {
    factory: 'leakyBucketQueue',
    params: ['rate', 'period', 'burst', 'queue', 'maxDelay'],
  },
} as const satisfies Record<string, { readonly factory: string; readonly params: readonly string[] }>;

/** The names of the built-in algorithms (also the `kind` on each algorithm object). */
export type AlgorithmKind = keyof typeof ALGORITHM_KINDS;

/** The names of the `params` of one kind (`AlgorithmParam<'gcra'>` is `'rate' | 'period' | 'burst'`). */
export type AlgorithmParam<K extends AlgorithmKind> = (typeof ALGORITHM_KINDS)[K]['params'][number];

/** The name of the factory of a kind, as `@sluice/core` exports it (`'tokenBucket'`). */
export type AlgorithmFactoryName = (typeof ALGORITHM_KINDS)[AlgorithmKind]['factory'];

/** The kinds, in the registry's order (the Redis scripts number their algorithms in this order). */
export const ALGORITHM_KIND_LIST = Object.keys(ALGORITHM_KINDS) as readonly AlgorithmKind[];

/** Whether `value` names a built-in kind. */
export function isAlgorithmKind(value: unknown): value is AlgorithmKind {
  return typeof value === 'string' && Object.hasOwn(ALGORITHM_KINDS, value);
}

/** `tokenBucket(), gcra(), … or leakyBucketQueue()`: the factories, for error messages. */
export function factoryList(): string {
  const calls = ALGORITHM_KIND_LIST.map((kind) => `${ALGORITHM_KINDS[kind].factory}()`);
  return `${calls.slice(0, -1).join(', ')} or ${calls.at(-1)}`;
}

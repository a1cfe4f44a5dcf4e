/** What the parent asks a worker process (worker-process.ts) to do, and how it builds algorithms. */
import { type Algorithm, type AlgorithmKind, tokenBucket } from '@sluice/core';
import { ALGORITHM_FACTORIES, ALGORITHM_KINDS } from '@sluice/core/adapter';

export interface AlgorithmSpec {
  readonly kind: AlgorithmKind;
  readonly options: Record<string, unknown>;
}

export type Command =
  | {
      type: 'burst';
      limits: { name: string; key: string; spec: AlgorithmSpec }[];
      clients: number;
      rounds: number;
      now: number;
    }
  | { type: 'acquire'; space: string; key: string; limit: number; count: number; now: number }
  | { type: 'release-all'; now: number }
  | { type: 'load'; keys: string[]; capacity: number; clients: number }
  | { type: 'hold-lock'; marker: string; key: string; capacity: number }
  | { type: 'stop' };

export function build(spec: AlgorithmSpec): Algorithm {
  const factory = ALGORITHM_FACTORIES[ALGORITHM_KINDS[spec.kind].factory] as (options: never) => Algorithm;
  return factory(spec.options as never);
}

/**
 * A bucket of `capacity` tokens that no test lives to see refilled (whole refills, 1000 days
 * apart): its level counts the takes, and each take leaves a level no other take leaves.
 */
export function neverRefilled(capacity: number): Algorithm {
  return tokenBucket({ capacity, refillInterval: '1000d', refill: 'stepped' });
}

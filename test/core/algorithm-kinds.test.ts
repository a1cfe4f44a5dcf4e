import * as core from '@sluice/core';
import { type AlgorithmKind, ErrorCode, Limiter, SluiceError } from '@sluice/core';
import { ALGORITHM_KIND_LIST, ALGORITHM_KINDS } from '@sluice/core/adapter';
import { describe, expect, it } from 'vitest';

/** One valid set of options per kind: a kind added to the registry fails to compile here until it has one. */
const SAMPLE: Record<AlgorithmKind, object> = {
  'token-bucket': { capacity: 10, refillInterval: '1s' },
  gcra: { rate: 10, period: '1s' },
  'fixed-window': { limit: 10, window: '1s' },
  'sliding-window-log': { limit: 10, window: '1s' },
  'sliding-window-counter': { limit: 10, window: '1s' },
  'leaky-bucket-queue': { rate: 10, period: '1s', queue: 5 },
};

describe('ALGORITHM_KINDS, the one declaration of the built-in algorithms', () => {
  it.each(ALGORITHM_KIND_LIST)(
    '%s: core exports its factory, which makes that kind with those params in that order',
    (kind) => {
      const entry = ALGORITHM_KINDS[kind];
      const factory = (core as unknown as Record<string, (options: object) => core.Algorithm>)[entry.factory];
      expect(typeof factory).toBe('function');
      const algorithm = factory!(SAMPLE[kind]);
      expect(algorithm.kind).toBe(kind);
      // The order matters: the fingerprint (part of every stored key) hashes the params in it.
      expect(Object.keys(algorithm.params)).toEqual(entry.params);
    },
  );

  it('the error for a value that is not an algorithm lists every factory of the registry', () => {
    let error: unknown;
    try {
      new Limiter({ algorithm: { kind: 'token-bucket' } as never });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(SluiceError);
    expect((error as SluiceError).code).toBe(ErrorCode.UNKNOWN_ALGORITHM);
    for (const kind of ALGORITHM_KIND_LIST)
      expect((error as Error).message).toContain(`${ALGORITHM_KINDS[kind].factory}()`);
    expect((error as Error).message).toContain('slidingWindowCounter() or leakyBucketQueue()');
  });
});

import { AdaptiveConcurrency, aimd, ErrorCode, envoyGradient, gradient2, vegas } from '@sluice/core';
import { describe, expect, it } from 'vitest';

/** Expects `build` to throw a SluiceError with this code naming this option. */
function rejects(build: () => unknown, code: string, option: string, message?: RegExp) {
  let error: unknown;
  try {
    build();
  } catch (e) {
    error = e;
  }
  expect(error).toMatchObject({ name: 'SluiceError', code, option });
  if (message) expect((error as Error).message).toMatch(message);
}

describe('adaptive concurrency options are validated at creation', () => {
  it('limit bounds, on every controller', () => {
    for (const make of [vegas, gradient2, aimd, envoyGradient]) {
      rejects(() => make({ minLimit: 0 }), ErrorCode.INVALID_OPTION, 'minLimit', /integer ≥ 1; got 0/);
      rejects(() => make({ maxLimit: 2.5 }), ErrorCode.INVALID_OPTION, 'maxLimit');
      rejects(
        () => make({ minLimit: 10, maxLimit: 5 }),
        ErrorCode.INVALID_OPTION,
        'maxLimit',
        /≥ minLimit \(10\)/,
      );
      rejects(
        () => make({ minLimit: 5, initialLimit: 4 }),
        ErrorCode.INVALID_OPTION,
        'initialLimit',
        /from minLimit \(5\)/,
      );
      rejects(() => make({ maxLimit: 30, initialLimit: 31 }), ErrorCode.INVALID_OPTION, 'initialLimit');
      rejects(
        () => make({ maxlimit: 3 } as never),
        ErrorCode.UNKNOWN_OPTION,
        'maxlimit',
        /accepted: .*maxLimit/,
      );
      rejects(() => make({ ignoreRttBelow: -1 }), ErrorCode.INVALID_OPTION, 'ignoreRttBelow');
    }
    // A default initial limit outside custom bounds follows the bounds (not an error the user made).
    expect(vegas({ maxLimit: 10 }).maxLimit).toBe(10);
    expect(gradient2({ minLimit: 50 }).minLimit).toBe(50);
  });

  it('windows (Netflix-style controllers)', () => {
    for (const make of [vegas, gradient2, aimd]) {
      rejects(() => make({ windowSamples: 0 }), ErrorCode.INVALID_OPTION, 'windowSamples');
      rejects(
        () => make({ minWindow: '2s', maxWindow: '1s' }),
        ErrorCode.INVALID_OPTION,
        'maxWindow',
        /≥ minWindow \(2000 ms\)/,
      );
      rejects(() => make({ minWindow: 'soon' as never }), ErrorCode.INVALID_DURATION, 'minWindow');
    }
  });

  it("each controller's own options", () => {
    rejects(() => vegas({ smoothing: 0 }), ErrorCode.INVALID_OPTION, 'smoothing', /\(0, 1\]/);
    rejects(() => vegas({ probeMultiplier: 0 }), ErrorCode.INVALID_OPTION, 'probeMultiplier');
    rejects(
      () => vegas({ rttNoLoadFloor: -1 }),
      ErrorCode.INVALID_OPTION,
      'rttNoLoadFloor',
      /must be a number ≥ 0; got -1/,
    );
    rejects(
      () => vegas({ rttNoLoadFloor: Number.POSITIVE_INFINITY }),
      ErrorCode.INVALID_OPTION,
      'rttNoLoadFloor',
    );
    rejects(() => gradient2({ rttTolerance: 0.9 }), ErrorCode.INVALID_OPTION, 'rttTolerance');
    rejects(() => gradient2({ queueSize: -1 }), ErrorCode.INVALID_OPTION, 'queueSize');
    rejects(() => gradient2({ longWindow: 0 }), ErrorCode.INVALID_OPTION, 'longWindow');
    rejects(() => aimd({ backoffRatio: 1 }), ErrorCode.INVALID_OPTION, 'backoffRatio', /\[0.5, 1\)/);
    rejects(() => aimd({ backoffRatio: 0.4 }), ErrorCode.INVALID_OPTION, 'backoffRatio');
    rejects(() => aimd({ timeout: 0 }), ErrorCode.INVALID_OPTION, 'timeout');
    rejects(() => envoyGradient({ percentile: 0 }), ErrorCode.INVALID_OPTION, 'percentile');
    rejects(() => envoyGradient({ jitter: 1.5 }), ErrorCode.INVALID_OPTION, 'jitter');
    rejects(() => envoyGradient({ buffer: -0.1 }), ErrorCode.INVALID_OPTION, 'buffer');
    rejects(() => envoyGradient({ minRttRequests: 0 }), ErrorCode.INVALID_OPTION, 'minRttRequests');
    rejects(
      () => envoyGradient({ minRttInterval: '1 fortnight' as never }),
      ErrorCode.INVALID_DURATION,
      'minRttInterval',
    );
    rejects(() => envoyGradient({ updateInterval: -5 }), ErrorCode.INVALID_OPTION, 'updateInterval');
    rejects(
      () => envoyGradient({ maxLimit: 2, minLimit: 1, initialLimit: 2 }),
      ErrorCode.INVALID_OPTION,
      'minRttConcurrency',
    );
  });

  it('the published defaults', () => {
    expect(vegas()).toMatchObject({
      minLimit: 1,
      maxLimit: 1000,
      params: {
        initialLimit: 20,
        smoothing: 1,
        probeMultiplier: 30,
        rttNoLoadFloor: 0.1,
        window: { windowSamples: 10, minWindow: 1000, maxWindow: 1000, ignoreRttBelow: 0.1 },
      },
    });
    expect(gradient2()).toMatchObject({
      minLimit: 20,
      maxLimit: 200,
      params: { initialLimit: 20, smoothing: 0.2, rttTolerance: 1.5, queueSize: 4, longWindow: 600 },
    });
    expect(aimd()).toMatchObject({
      minLimit: 20,
      maxLimit: 200,
      params: { initialLimit: 20, backoffRatio: 0.9, timeout: 5000 },
    });
    expect(envoyGradient()).toMatchObject({
      minLimit: 3,
      maxLimit: 1000,
      params: {
        minRttConcurrency: 3,
        minRttRequests: 50,
        minRttInterval: 60_000,
        jitter: 0.15,
        buffer: 0.25,
        window: { percentile: 0.5, minWindow: 100, windowSamples: 1 },
      },
    });
  });

  it('adaptiveConcurrency', () => {
    rejects(
      () => new AdaptiveConcurrency({ controller: {} as never }),
      ErrorCode.INVALID_OPTION,
      'controller',
      /vegas\(\)/,
    );
    rejects(
      () => new AdaptiveConcurrency({ partitions: { critical: 0.8, low: 0.3 } }),
      ErrorCode.INVALID_OPTION,
      'partitions',
      /at most 1/,
    );
    rejects(
      () => new AdaptiveConcurrency({ partitions: { critical: 1, low: 0 } }),
      ErrorCode.INVALID_OPTION,
      'partitions.low',
    );
    rejects(
      () => new AdaptiveConcurrency({ partitions: {} }),
      ErrorCode.INVALID_OPTION,
      'partitions',
      /at least one/,
    );
    rejects(
      () => new AdaptiveConcurrency({ partitions: { '': 1 } }),
      ErrorCode.INVALID_OPTION,
      'priorities[0]',
    );
    rejects(
      () => new AdaptiveConcurrency({ partitions: ['critical'] as never }),
      ErrorCode.INVALID_OPTION,
      'partitions',
    );
    rejects(() => new AdaptiveConcurrency({ demandWindow: 0 }), ErrorCode.INVALID_OPTION, 'demandWindow');
    rejects(
      () => new AdaptiveConcurrency({ retryAfter: { min: '5s', max: '1s' } }),
      ErrorCode.INVALID_OPTION,
      'retryAfter.max',
    );
    rejects(() => new AdaptiveConcurrency({ name: '' }), ErrorCode.INVALID_OPTION, 'name');
    rejects(() => new AdaptiveConcurrency({ random: 0.5 as never }), ErrorCode.INVALID_OPTION, 'random');
    rejects(() => new AdaptiveConcurrency({ limit: 10 } as never), ErrorCode.UNKNOWN_OPTION, 'limit');
  });
});

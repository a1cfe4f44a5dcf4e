import { type ServiceError, status } from '@grpc/grpc-js';
import { LmdbBackend, RateLimitService } from '@sluice/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configDir, d, type RlsClient, type RlsSubject, startRls } from './rls-harness.js';

// Bad input gets a clear gRPC error and costs the other clients nothing: each bad call below runs
// while a second client's calls go on, and the second client's answers are checked too.

const CONFIG = {
  'app.yaml': `
domain: app
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 1000 }
`,
};

let s: RlsSubject;
let bad: RlsClient;
let good: RlsClient;

beforeAll(async () => {
  s = await startRls(CONFIG);
  bad = s.client();
  good = s.client();
});
afterAll(() => s.stop());

async function refused(call: Promise<unknown>): Promise<ServiceError> {
  try {
    await call;
  } catch (err) {
    return err as ServiceError;
  }
  throw new Error('the call was answered');
}

/** Runs `badCall` while the good client keeps asking; returns the bad call's error. */
let goodKeys = 0;

async function besideGoodTraffic(badCall: () => Promise<unknown>): Promise<ServiceError> {
  const goods = Array.from({ length: 20 }, () => good.should('app', [d('user', `good-${goodKeys++}`)]));
  const err = await refused(badCall());
  const answers = await Promise.all(goods);
  expect(answers.every((r) => r.overall_code === 'OK' && r.statuses[0]!.limit_remaining === 999)).toBe(true);
  return err;
}

describe('bad requests', () => {
  it('an empty domain: INVALID_ARGUMENT', async () => {
    const err = await besideGoodTraffic(() => bad.should('', [d('user', 'x')]));
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.details).toBe('rate limit domain must not be empty');
  });

  it('no descriptors: INVALID_ARGUMENT', async () => {
    const err = await besideGoodTraffic(() => bad.should('app', []));
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.details).toBe('rate limit descriptor list must not be empty');
  });

  it('10,000 descriptors: INVALID_ARGUMENT naming the bound, nothing counted', async () => {
    const many = Array.from({ length: 10_000 }, (_, i) => d('user', `many-${i}`));
    const err = await besideGoodTraffic(() => bad.should('app', many));
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.details).toBe('a request may carry at most 1000 descriptors (maxDescriptors); got 10000');
    const after = await good.should('app', [d('user', 'many-0')]);
    expect(after.statuses[0]!.limit_remaining).toBe(999);
  });

  it('a 1 MiB value: INVALID_ARGUMENT naming the size', async () => {
    const err = await besideGoodTraffic(() => bad.should('app', [d('user', 'x'.repeat(1024 * 1024))]));
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/^descriptor 0: its domain and entries come to 1048585 bytes, at most 1900/);
  });

  it('a malformed frame: the call fails with INTERNAL, the connection and the others go on', async () => {
    const err = await besideGoodTraffic(
      () =>
        new Promise((resolve, reject) => {
          bad.raw.makeUnaryRequest(
            '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
            () => Buffer.from([0x12, 0x05, 0x0a]), // descriptors: 5 bytes announced, 1 sent
            (b: Buffer) => b,
            {},
            (e, r) => (e === null ? resolve(r) : reject(e)),
          );
        }),
    );
    expect(err.code).toBe(status.INTERNAL);
    expect(err.details).toMatch(/deserializ/i);
    // The same client, on the same channel, is answered next.
    expect((await bad.should('app', [d('user', 'after-malformed')])).overall_code).toBe('OK');
  });
});

describe('a bad config', () => {
  it('an unknown algorithm in YAML: the service does not start, the error names file, line and the known ones', async () => {
    const dir = await configDir({
      'ok.yaml':
        'domain: fine\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: 1 }\n',
      'typo.yaml':
        'domain: typo\ndescriptors:\n  - key: a\n    rate_limit:\n      algorithm: sliding_windw\n      unit: minute\n      requests_per_unit: 5\n',
    });
    expect(
      () =>
        new RateLimitService({ configDir: dir, backend: new LmdbBackend(s.server!.server.stateDb), port: 0 }),
    ).toThrow(
      expect.objectContaining({
        code: 'ERR_SLUICE_INVALID_OPTION',
        message: expect.stringMatching(
          /typo\.yaml:5: unknown algorithm 'sliding_windw'; known: fixed_window, sliding_window_counter, sliding_window_log, token_bucket, gcra$/,
        ),
      }),
    );
  });
});

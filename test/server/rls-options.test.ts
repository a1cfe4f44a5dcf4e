import { afterEach, describe, expect, it } from 'vitest';
import { d, type RlsSubject, startRls } from './rls-harness.js';

// The service-wide options envoyproxy/ratelimit sets by environment: the IETF RateLimit headers
// (LIMIT_RESPONSE_HEADERS_ENABLED, off by default) and the global shadow mode (SHADOW_MODE).

const CONFIG = {
  'app.yaml': `
domain: app
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: org
    rate_limit: { unit: hour, requests_per_unit: 100 }
`,
};
const T = Date.UTC(2030, 0, 1, 0, 0, 15);

let s: RlsSubject | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

describe('response headers', () => {
  it('off by default: no header is added', async () => {
    s = await startRls(CONFIG, {}, undefined, T);
    const r = await s.client().should('app', [d('user', 'u')]);
    expect(r.response_headers_to_add).toEqual([]);
  });

  it('on: the headers of the descriptor closest to its limit, then of the one over it', async () => {
    s = await startRls(CONFIG, { responseHeaders: true }, undefined, T);
    const c = s.client();
    const first = await c.should('app', [d('org', 'o'), d('user', 'u')]);
    expect(first.response_headers_to_add).toEqual([
      { key: 'RateLimit-Limit', value: '2', raw_value: Buffer.alloc(0) },
      { key: 'RateLimit-Remaining', value: '1', raw_value: Buffer.alloc(0) },
      { key: 'RateLimit-Reset', value: '45', raw_value: Buffer.alloc(0) },
    ]);
    await c.should('app', [d('user', 'u')]);
    const over = await c.should('app', [d('user', 'u'), d('org', 'o')]);
    expect(over.overall_code).toBe('OVER_LIMIT');
    expect(over.response_headers_to_add.map((h) => [h.key, h.value])).toEqual([
      ['RateLimit-Limit', '2'],
      ['RateLimit-Remaining', '0'],
      ['RateLimit-Reset', '45'],
    ]);
  });
});

describe('global shadow mode', () => {
  it('answers OK overall while the descriptors still say OVER_LIMIT and still count', async () => {
    s = await startRls(CONFIG, { shadowMode: true }, undefined, T);
    const c = s.client();
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push(await c.should('app', [d('user', 'u')]));
    expect(codes.map((r) => r.overall_code)).toEqual(['OK', 'OK', 'OK']);
    expect(codes[2]!.statuses[0]!.code).toBe('OVER_LIMIT');
    expect(s.rls.counters()['app.user']).toMatchObject({ totalHits: 3, overLimit: 1 });
  });
});

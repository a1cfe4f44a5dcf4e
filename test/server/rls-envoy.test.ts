import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { d, ownClient, type RlsClient, type RlsSubject, startRls } from './rls-harness.js';

// envoyproxy/ratelimit's documented semantics, on its own README examples, asked through a client
// generated from Envoy's published rls.proto (rls-harness.ts), answered from sluice-server's LMDB.

const EXAMPLES = {
  'example3.yaml': `
domain: edge_proxy_per_ip
descriptors:
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 10

  # Black list IP
  - key: remote_address
    value: 50.0.0.5
    rate_limit:
      unit: second
      requests_per_unit: 0
`,
  'example4.yaml': `
domain: example4
descriptors:
  - key: key
    value: value
    rate_limit:
      requests_per_unit: 300
      unit: second
`,
  'example5.yaml': `
domain: internal
descriptors:
  - key: ldap
    rate_limit:
      unlimited: true

  - key: azure
    rate_limit:
      unit: minute
      requests_per_unit: 100
`,
  'example6.yaml': `
domain: example6
descriptors:
  - key: service
    descriptors:
      - key: user
        value: user-a
        rate_limit:
          requests_per_unit: 10
          unit: second
        shadow_mode: true
      - key: user
        value: user-b
        rate_limit:
          requests_per_unit: 20
          unit: second
`,
  'example7.yaml': `
domain: example7
descriptors:
  - key: key_1
    value: value_1
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          name: specific_limit
          requests_per_unit: 5
          unit: second
  - key: key_2
    value: value_2
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          replaces:
            - name: specific_limit
          requests_per_unit: 10
          unit: second
`,
  'example9.yaml': `
domain: example9
descriptors:
  - key: key1
    value: value*
    rate_limit:
      unit: minute
      requests_per_unit: 2
  - key: path
    value: /api/*/action
    rate_limit:
      unit: minute
      requests_per_unit: 1
`,
  'example11.yaml': `
domain: example11
descriptors:
  - key: files
    value: files/*
    share_threshold: true
    rate_limit:
      unit: hour
      requests_per_unit: 10
  - key: files_no_share
    value: files_no_share/*
    share_threshold: false
    rate_limit:
      unit: hour
      requests_per_unit: 10
`,
  'window.yaml': `
domain: window
descriptors:
  - key: client
    rate_limit:
      unit: minute
      requests_per_unit: 3
`,
  'sluice.yaml': `
domain: sluice
descriptors:
  - key: sliding
    rate_limit:
      algorithm: sliding_window_counter
      unit: minute
      requests_per_unit: 10
  - key: fixed
    rate_limit:
      unit: minute
      requests_per_unit: 10
  - key: bucket
    rate_limit:
      algorithm: token_bucket
      requests_per_unit: 2
      duration: 10s
      burst: 4
  - key: five
    rate_limit:
      algorithm: gcra
      requests_per_unit: 5
      duration: 5m
`,
  'all.yaml': `
domain: together
all_or_nothing: true
descriptors:
  - key: a
    rate_limit: { unit: minute, requests_per_unit: 1 }
  - key: b
    rate_limit: { unit: minute, requests_per_unit: 5 }
`,
  'apart.yaml': `
domain: apart
descriptors:
  - key: a
    rate_limit: { unit: minute, requests_per_unit: 1 }
  - key: b
    rate_limit: { unit: minute, requests_per_unit: 5 }
`,
};

let s: RlsSubject;
let c: RlsClient;
const T0 = Date.UTC(2030, 0, 1, 0, 0, 0);

beforeAll(async () => {
  s = await startRls(EXAMPLES);
  c = s.client();
});
afterAll(() => s.stop());

/** Sends `n` requests with one descriptor and returns their statuses' codes. */
async function codes(domain: string, descriptor: ReturnType<typeof d>, n: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push((await c.should(domain, [descriptor])).statuses[0]!.code);
  return out;
}

describe('fixed windows aligned to the unit', () => {
  it('counts down, refuses past the limit, and starts again at the next whole minute', async () => {
    s.clock.now = T0 + 10_000; // 00:00:10
    const first = await c.should('window', [d('client', 'one')]);
    expect(first.overall_code).toBe('OK');
    expect(first.statuses[0]).toEqual({
      code: 'OK',
      current_limit: { name: '', requests_per_unit: 3, unit: 'MINUTE' },
      limit_remaining: 2,
      duration_until_reset: { seconds: 50, nanos: 0 },
      quota: null,
    });
    expect(await codes('window', d('client', 'one'), 3)).toEqual(['OK', 'OK', 'OVER_LIMIT']);
    s.clock.now = T0 + 59_999;
    const late = await c.should('window', [d('client', 'one')]);
    expect(late.overall_code).toBe('OVER_LIMIT');
    expect(late.statuses[0]!.limit_remaining).toBe(0);
    expect(late.statuses[0]!.duration_until_reset).toEqual({ seconds: 1, nanos: 0 });
    // Not 60 s after the first hit (00:01:10): the window is the whole minute.
    s.clock.now = T0 + 60_000;
    expect(await codes('window', d('client', 'one'), 3)).toEqual(['OK', 'OK', 'OK']);
    // Another value of the same key has its own counter.
    expect(await codes('window', d('client', 'two'), 1)).toEqual(['OK']);
  });

  it('hits_addend: a refused request still fills the window, as its INCRBY does there', async () => {
    s.clock.now = T0 + 120_000;
    const two = await c.should('window', [d('client', 'addend')], 2);
    expect(two.statuses[0]!.limit_remaining).toBe(1);
    expect((await c.should('window', [d('client', 'addend')], 2)).overall_code).toBe('OVER_LIMIT');
    // 2 + 2 > 3 refused; counting it there makes 4, so even one more is over.
    expect((await c.should('window', [d('client', 'addend')], 1)).overall_code).toBe('OVER_LIMIT');
  });

  it('the most specific match: key/value before key; requests_per_unit 0 refuses all', async () => {
    s.clock.now = T0 + 180_000;
    const blocked = await c.should('edge_proxy_per_ip', [d('remote_address', '50.0.0.5')]);
    expect(blocked.overall_code).toBe('OVER_LIMIT');
    expect(blocked.statuses[0]!.current_limit).toEqual({ name: '', requests_per_unit: 0, unit: 'SECOND' });
    expect(await codes('edge_proxy_per_ip', d('remote_address', '50.0.0.1'), 11)).toEqual([
      ...Array(10).fill('OK'),
      'OVER_LIMIT',
    ]);
  });

  it('a descriptor deeper than the config matches nothing (example 4), and answers OK with no limit', async () => {
    const r = await c.should('example4', [d('key', 'value', 'subkey', 'subvalue')]);
    expect(r.overall_code).toBe('OK');
    expect(r.statuses[0]).toMatchObject({ code: 'OK', current_limit: null, limit_remaining: 0 });
    const unknown = await c.should('no_such_domain', [d('key', 'value')]);
    expect(unknown.statuses[0]).toMatchObject({ code: 'OK', current_limit: null });
  });
});

describe('unlimited, shadow mode, replaces', () => {
  it('unlimited: OK with limit_remaining MaxUint32 and no current limit', async () => {
    const r = await c.should('internal', [d('ldap', 'x'), d('azure', 'y')]);
    expect(r.statuses[0]).toMatchObject({ code: 'OK', current_limit: null, limit_remaining: 4294967295 });
    expect(r.statuses[1]).toMatchObject({ code: 'OK', limit_remaining: 99 });
  });

  it('shadow mode: past the limit the status stays OK (remaining 0) and the shadow counter counts it', async () => {
    s.clock.now = T0 + 240_000;
    const a = await codes('example6', d('service', 'auth', 'user', 'user-a'), 12);
    expect(a).toEqual(Array(12).fill('OK'));
    const last = await c.should('example6', [d('service', 'auth', 'user', 'user-a')]);
    expect(last.statuses[0]!.limit_remaining).toBe(0);
    expect(s.rls.counters()['example6.service.user_user-a']).toMatchObject({ totalHits: 13, shadowMode: 3 });
    const b = await codes('example6', d('service', 'auth', 'user', 'user-b'), 21);
    expect(b.at(-1)).toBe('OVER_LIMIT');
    expect(b.filter((x) => x === 'OK')).toHaveLength(20);
  });

  it('replaces: the replaced limit is neither applied nor spent', async () => {
    s.clock.now = T0 + 300_000;
    const both = [d('key_1', 'value_1', 'user', 'bkthomps'), d('key_2', 'value_2', 'user', 'bkthomps')];
    for (let i = 0; i < 10; i++) {
      const r = await c.should('example7', both);
      expect(r.overall_code).toBe('OK');
      expect(r.statuses[0]).toMatchObject({ code: 'OK', current_limit: null });
      expect(r.statuses[1]!.limit_remaining).toBe(9 - i);
    }
    expect((await c.should('example7', both)).overall_code).toBe('OVER_LIMIT');
    // The 5/s limit of (key_1, user) alone was never spent.
    expect(await codes('example7', d('key_1', 'value_1', 'user', 'bkthomps'), 6)).toEqual([
      'OK',
      'OK',
      'OK',
      'OK',
      'OK',
      'OVER_LIMIT',
    ]);
  });
});

describe('wildcards', () => {
  it('trailing and middle wildcards; each matching value counts on its own', async () => {
    s.clock.now = T0 + 360_000;
    expect(await codes('example9', d('key1', 'value1'), 3)).toEqual(['OK', 'OK', 'OVER_LIMIT']);
    expect(await codes('example9', d('key1', 'valueXYZ'), 1)).toEqual(['OK']);
    expect(await codes('example9', d('path', '/api/123/action'), 2)).toEqual(['OK', 'OVER_LIMIT']);
    const other = await c.should('example9', [d('path', '/api/123/other')]);
    expect(other.statuses[0]!.current_limit).toBeNull();
  });

  it('share_threshold: every value matching the wildcard shares one counter', async () => {
    s.clock.now = T0 + 3_600_000;
    await codes('example11', d('files', 'files/a.pdf'), 5);
    await codes('example11', d('files', 'files/b.csv'), 5);
    expect(await codes('example11', d('files', 'files/c.txt'), 1)).toEqual(['OVER_LIMIT']);
    await codes('example11', d('files_no_share', 'files_no_share/a.pdf'), 10);
    expect(await codes('example11', d('files_no_share', 'files_no_share/b.csv'), 1)).toEqual(['OK']);
  });
});

describe('the request', () => {
  it('a limit override sent with the descriptor replaces the configured one', async () => {
    s.clock.now = T0 + 7_200_000;
    const desc = { ...d('azure', 'override'), limit: { requests_per_unit: 2, unit: 'HOUR' } };
    const r = await c.should('internal', [desc, desc, desc]);
    expect(r.statuses.map((x) => x.code)).toEqual(['OK', 'OK', 'OVER_LIMIT']);
    expect(r.statuses[0]!.current_limit).toEqual({ name: '', requests_per_unit: 2, unit: 'HOUR' });
  });

  it('per-descriptor hits_addend overrides the request one; 0 looks without taking (our proto: the published snapshot predates the field)', async () => {
    s.clock.now = T0 + 7_300_000;
    const own = ownClient(s.port);
    try {
      const r = await own.should(
        'window',
        [
          { ...d('client', 'per-descriptor'), hits_addend: { value: 2 } },
          { ...d('client', 'per-descriptor-b') },
        ],
        1,
      );
      expect(r.statuses.map((x) => x.limit_remaining)).toEqual([1, 2]);
      const look = await own.should('window', [
        { ...d('client', 'per-descriptor'), hits_addend: { value: 0 } },
      ]);
      expect(look.statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 1 });
      const again = await own.should('window', [
        { ...d('client', 'per-descriptor'), hits_addend: { value: 0 } },
      ]);
      expect(again.statuses[0]!.limit_remaining).toBe(1);
    } finally {
      own.close();
    }
  });
});

describe('sluice algorithms per descriptor', () => {
  it('sliding_window_counter refuses across the minute boundary where the fixed window admits all', async () => {
    s.clock.now = T0 + 10_800_000 + 50_000; // hh:00:50
    expect(await codes('sluice', d('sliding', 'k'), 10)).toEqual(Array(10).fill('OK'));
    expect(await codes('sluice', d('fixed', 'k'), 10)).toEqual(Array(10).fill('OK'));
    s.clock.now += 30_000; // hh:01:20: two thirds of the last minute still weigh
    const fixed = await codes('sluice', d('fixed', 'k'), 10);
    expect(fixed).toEqual(Array(10).fill('OK'));
    const sliding = await codes('sluice', d('sliding', 'k'), 10);
    const admitted = sliding.filter((x) => x === 'OK').length;
    expect(admitted).toBeGreaterThan(0);
    expect(admitted).toBeLessThan(10);
  });

  it('token_bucket with a duration and a burst; gcra over 5m; a duration that is no unit reports UNKNOWN', async () => {
    s.clock.now = T0 + 14_400_000;
    expect(await codes('sluice', d('bucket', 'k'), 5)).toEqual(['OK', 'OK', 'OK', 'OK', 'OVER_LIMIT']);
    const r = await c.should('sluice', [d('bucket', 'k')]);
    expect(r.statuses[0]!.current_limit).toEqual({ name: '', requests_per_unit: 2, unit: 'UNKNOWN' });
    s.clock.now += 5_000; // 2 per 10 s: one token back
    expect(await codes('sluice', d('bucket', 'k'), 2)).toEqual(['OK', 'OVER_LIMIT']);
    const five = await c.should('sluice', [d('five', 'k')]);
    expect(five.statuses[0]!.current_limit).toEqual({ name: '', requests_per_unit: 5, unit: 'UNKNOWN' });
    expect(five.overall_code).toBe('OK');
  });

  it('all_or_nothing: a refused request spends none of its descriptors (the default spends the others)', async () => {
    s.clock.now = T0 + 18_000_000;
    const pair = [d('a', 'x'), d('b', 'x')];
    expect((await c.should('together', pair)).overall_code).toBe('OK');
    expect((await c.should('together', pair)).overall_code).toBe('OVER_LIMIT');
    expect((await c.should('together', [d('b', 'x')])).statuses[0]!.limit_remaining).toBe(3);
    expect((await c.should('apart', pair)).overall_code).toBe('OK');
    expect((await c.should('apart', pair)).overall_code).toBe('OVER_LIMIT');
    expect((await c.should('apart', [d('b', 'x')])).statuses[0]!.limit_remaining).toBe(2);
  });
});

describe('counters', () => {
  it('counts hits, within, near (past 80%) and over per stats key', async () => {
    const counters = s.rls.counters();
    // window.client: 3 + 1 refused (first test), 1 + 2 + 3 ok minute 2, … at least these hold:
    expect(counters['edge_proxy_per_ip.remote_address']).toEqual({
      totalHits: 11,
      overLimit: 1,
      nearLimit: 2,
      withinLimit: 10,
      shadowMode: 0,
    });
  });
});

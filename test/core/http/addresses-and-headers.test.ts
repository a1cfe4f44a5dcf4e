import { combine, decide } from '@sluice/core/adapter';
import { describe, expect, it } from 'vitest';
import { resetSeconds } from '../../../packages/core/src/http/headers.js';
import { clientAddress } from '../../../packages/core/src/http/ip.js';
import { retryAfterSeconds } from '../../../packages/core/src/http/problem.js';

describe('clientAddress', () => {
  it('groups IPv6 by prefix, unmaps IPv4-mapped addresses, rejects garbage', () => {
    expect(clientAddress('203.0.113.7', 56)).toBe('203.0.113.7');
    expect(clientAddress('::ffff:203.0.113.7', 56)).toBe('203.0.113.7');
    expect(clientAddress('::ffff:cb00:7107', 56)).toBe('203.0.113.7');
    expect(clientAddress('2001:db8:abcd:12ff:1::1', 56)).toBe('2001:db8:abcd:1200::/56');
    expect(clientAddress('2001:db8:abcd:12ff:1::1', 48)).toBe('2001:db8:abcd::/48');
    expect(clientAddress('2001:db8:abcd:12ff:1::1', 64)).toBe('2001:db8:abcd:12ff::/64');
    expect(clientAddress('not:an:address', 56)).toBeUndefined();
  });
});

describe('retryAfterSeconds and resetSeconds', () => {
  it('Retry-After is the latest retry time of the refusing limits, at least 1 s, and their reset says the same', () => {
    const short = decide(false, 5, 0, 200, 100, 0, 'a', 'rate-limited');
    expect([retryAfterSeconds(combine([short])), resetSeconds(short)]).toEqual([1, 1]);
    // A token bucket with its next token in 1 s and full in 4.001 s: retry in 1 s, not 5.
    const bucket = decide(false, 5, 0, 4001, 1000, 0, 'a', 'rate-limited');
    expect([retryAfterSeconds(combine([bucket])), resetSeconds(bucket)]).toEqual([1, 1]);
    const daily = decide(true, 100, 50, 86_400_000, 0, 0, 'daily', undefined);
    const burst = decide(false, 5, 0, 2000, 1500, 0, 'burst', 'rate-limited');
    expect(retryAfterSeconds(combine([daily, burst]))).toBe(2);
    // An admitting limit keeps its reset; the refusing one reports its retry time.
    expect([resetSeconds(daily), resetSeconds(burst)]).toEqual([86_400, 2]);
    const later = decide(false, 9, 0, 9000, 7001, 0, 'later', 'rate-limited');
    expect(retryAfterSeconds(combine([burst, later]))).toBe(8);
    // A decision of its own (a shedder's, a lease's): its retryAfter.
    expect(retryAfterSeconds(decide(false, 0, 0, 0, 4200, 0, 'fleet', 'shed'))).toBe(5);
    const never = decide(false, 5, 0, 3000, -1, 0, 'a', 'cost-exceeds-limit');
    expect(retryAfterSeconds(combine([never]))).toBeUndefined();
    expect(resetSeconds(never)).toBe(3);
  });
});

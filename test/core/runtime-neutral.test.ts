/**
 * Core runs on Node, Bun, Deno and Workers (issue 25 §2): what replaced its Node built-ins gives
 * what they gave. Token keys are the same SHA-256 text as `node:crypto` made (stored keys still
 * count after an upgrade), lease ids keep their shape, the default hold is the timer of
 * `node:timers/promises`, and the Node-only shedding signals refuse with a coded error elsewhere.
 * (The real runtimes: test/hono/runtimes/.)
 */
import { createHash } from 'node:crypto';
import { byToken, eventLoopDelaySignal, eventLoopUtilizationSignal, type RequestAccess } from '@sluice/core';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { base64url } from '../../packages/core/src/base64url.js';
import { leaseId } from '../../packages/core/src/concurrency/lease-id.js';
import { sleep } from '../../packages/core/src/sleep.js';

/** A request that is only its Authorization header. */
const withHeader = (value: string): RequestAccess<string> => ({
  ip: () => undefined,
  method: () => 'GET',
  route: () => undefined,
  header: (_req, name) => (name === 'authorization' ? value : undefined),
  proxyTrust: () => 'none',
  warn: () => {},
});

const nodeDigest = (text: string) => createHash('sha256').update(text).digest('base64url').slice(0, 22);

afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

describe('core without Node built-ins', () => {
  it("byToken() keys are node:crypto's SHA-256 text, for any token (UTF-8 and lone surrogates included)", () => {
    const key = byToken();
    fc.assert(
      fc.property(fc.string({ unit: 'binary', minLength: 1 }), (token) => {
        // A token of visible characters, as a header carries it (no leading or trailing whitespace).
        const secret = `x${token.replace(/[ \t]/g, '_')}x`;
        expect(key('req', withHeader(`Bearer ${secret}`))).toBe(`token:${nodeDigest(secret)}`);
        expect(key('req', withHeader(secret))).toBe(`credential:${nodeDigest(secret)}`);
      }),
      { numRuns: 300 },
    );
    expect(key('req', withHeader('Bearer abc'))).toBe('token:ungWv48Bz-pBQUDeXa4iI7');
  });

  it("base64url() is Buffer's base64url, for any bytes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 70 }), (bytes) => {
        expect(base64url(bytes)).toBe(Buffer.from(bytes).toString('base64url'));
      }),
    );
  });

  it('lease ids: 64 random bits for the process, then a counter', () => {
    const [first, second] = [leaseId(), leaseId()];
    expect(first).toMatch(/^[A-Za-z0-9_-]{11}\.[0-9a-z]+$/);
    const [prefix, count] = first!.split('.');
    expect(second).toBe(`${prefix}.${(Number.parseInt(count!, 36) + 1).toString(36)}`);
  });

  it('the default hold resolves after its time, and rejects with the reason once the signal aborts (timer cleared)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let done = false;
    const held = sleep(1000, new AbortController().signal).then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(999);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await held;
    expect(done).toBe(true);

    const leaving = new AbortController();
    const aborted = sleep(1000, leaving.signal);
    expect(vi.getTimerCount()).toBe(1);
    leaving.abort(new Error('client gone'));
    await expect(aborted).rejects.toThrow('client gone');
    expect(vi.getTimerCount()).toBe(0);
    const gone = AbortSignal.abort(new Error('gone before'));
    await expect(sleep(1000, gone)).rejects.toThrow('gone before');
    expect(vi.getTimerCount()).toBe(0);
  });

  it("the event-loop signals refuse with ERR_SLUICE_UNSUPPORTED where Node's APIs are missing or measure nothing", () => {
    const unsupported = (what: RegExp) =>
      expect.objectContaining({ code: 'ERR_SLUICE_UNSUPPORTED', message: expect.stringMatching(what) });
    vi.stubGlobal('performance', { now: () => 0 });
    expect(() => eventLoopUtilizationSignal()).toThrow(unsupported(/eventLoopUtilization/));
    vi.unstubAllGlobals();
    // Workers have one that always answers 0; Deno's delay histogram records no delay.
    vi.stubGlobal('navigator', { userAgent: 'Cloudflare-Workers' });
    expect(() => eventLoopUtilizationSignal()).toThrow(unsupported(/eventLoopUtilization.*workers/));
    vi.unstubAllGlobals();
    vi.stubGlobal('Deno', {});
    expect(() => eventLoopDelaySignal()).toThrow(unsupported(/monitorEventLoopDelay.*deno/));
    expect(() => eventLoopUtilizationSignal()).toThrow(unsupported(/eventLoopUtilization.*deno/));
    vi.unstubAllGlobals();
    expect(eventLoopUtilizationSignal()()).toBeGreaterThanOrEqual(0);

    vi.spyOn(process, 'getBuiltinModule').mockReturnValue(undefined as never);
    expect(() => eventLoopDelaySignal()).toThrow(unsupported(/monitorEventLoopDelay/));
    vi.restoreAllMocks();
    const signal = eventLoopDelaySignal();
    expect(signal()).toBeGreaterThanOrEqual(0);
    signal.close();
  });
});

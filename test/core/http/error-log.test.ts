// The adapters' default onError: a failure is said loudly but in a few lines. The first error
// of each distinct message is written with its stack; the rest are counted, and the count is
// written at most once per summary interval (an unref'd timer: it never holds the process open).
import { CONSOLE_DEFAULTS, fewErrorLines, SUMMARY_INTERVAL } from '@sluice/core/adapter';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

describe('fewErrorLines: the default onError', () => {
  let errors: Array<[Error, string]>;
  let lines: string[];
  let onError: (error: Error, req: string) => void;

  beforeEach(() => {
    vi.useFakeTimers({ now: 1_700_000_000_000 });
    errors = [];
    lines = [];
    onError = fewErrorLines<string>({
      error: (error, req) => errors.push([error, req]),
      line: (text) => lines.push(text),
    });
  });
  afterEach(() => {
    // Spies first: one made on setTimeout under fake timers restores to the fake clock's.
    vi.restoreAllMocks();
    vi.useRealTimers();
  });

  it('writes the first error of a message with its request; the same message again is counted, not written', () => {
    for (let i = 0; i < 1000; i++) onError(new Error('bad header'), `req ${i}`);
    expect(errors.map(([error, req]) => [error.message, req])).toEqual([['bad header', 'req 0']]);
    expect(lines).toEqual([]);
    vi.advanceTimersByTime(SUMMARY_INTERVAL - 1);
    expect(lines).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(lines).toEqual([
      '999 more limiter errors in the last 10 s (latest: Error: bad header), each request handled by the storeFailure policy',
    ]);
  });

  it('a distinct message is written with its stack too', () => {
    onError(new Error('a'), 'r');
    onError(new TypeError('b'), 'r');
    onError(new Error('a'), 'r');
    expect(errors.map(([error]) => String(error))).toEqual(['Error: a', 'TypeError: b']);
  });

  it('counts are written at most once per interval while errors last, and nothing once they stop', () => {
    onError(new Error('x'), 'r');
    for (let second = 0; second < 35; second++) {
      onError(new Error('x'), 'r');
      onError(new Error('x'), 'r');
      vi.advanceTimersByTime(1000);
    }
    expect(lines).toHaveLength(3);
    expect(lines.map((line) => line.split(' ')[0])).toEqual(['20', '20', '20']);
    vi.advanceTimersByTime(SUMMARY_INTERVAL);
    // The last 5 s of errors, written when their interval ends.
    expect(lines).toHaveLength(4);
    expect(lines[3]?.startsWith('10 more limiter errors')).toBe(true);
    vi.advanceTimersByTime(10 * SUMMARY_INTERVAL);
    expect(lines).toHaveLength(4);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('one error more is said in the singular', () => {
    onError(new Error('x'), 'r');
    onError(new Error('x'), 'r');
    vi.advanceTimersByTime(SUMMARY_INTERVAL);
    expect(lines[0]?.startsWith('1 more limiter error in the last 10 s')).toBe(true);
  });

  it('memory stays bounded: past the distinct messages it keeps, new messages are only counted', () => {
    for (let i = 0; i < 10_000; i++) onError(new Error(`input ${i}`), 'r');
    expect(errors.length).toBeLessThanOrEqual(10);
    vi.advanceTimersByTime(SUMMARY_INTERVAL);
    expect(lines).toEqual([
      `${10_000 - errors.length} more limiter errors in the last 10 s (latest: Error: input 9999), each request handled by the storeFailure policy`,
    ]);
  });

  it('its timer is unref’d: a failing app still exits', () => {
    const unref = vi.fn();
    const realSetTimeout = globalThis.setTimeout;
    const spy = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((
      ...args: Parameters<typeof setTimeout>
    ) => {
      const timer = realSetTimeout(...args);
      return Object.assign(timer, {
        unref: () => {
          unref();
          return timer;
        },
      });
    }) as typeof setTimeout);
    onError(new Error('x'), 'r');
    onError(new Error('x'), 'r');
    expect(spy).toHaveBeenCalledTimes(1);
    expect(unref).toHaveBeenCalledTimes(1);
  });

  it('a writer that throws does not reach the request', () => {
    const throwing = fewErrorLines<string>({
      error: () => {
        throw new Error('logger down');
      },
      line: () => {
        throw new Error('logger down');
      },
    });
    expect(() => throwing(new Error('x'), 'r')).not.toThrow();
    throwing(new Error('x'), 'r');
    expect(() => vi.advanceTimersByTime(SUMMARY_INTERVAL)).not.toThrow();
  });
});

// A lease release that fails (the store away) fails for every request that held a lease: the
// default onReleaseError must not write a line per request either.
describe('the default onReleaseError: a few lines, not one per failed release', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_700_000_000_000 });
  });
  afterEach(() => {
    vi.restoreAllMocks();
    vi.useRealTimers();
  });

  it('the console default writes the first failure, then a count of the others', () => {
    const console = vi.spyOn(globalThis.console, 'error').mockImplementation(() => undefined);
    for (let i = 0; i < 1000; i++) CONSOLE_DEFAULTS.onReleaseError(new Error('store away'));
    expect(console).toHaveBeenCalledTimes(1);
    expect(String(console.mock.calls[0]?.[0])).toContain('a lease release failed in the store');
    vi.advanceTimersByTime(SUMMARY_INTERVAL);
    expect(console).toHaveBeenCalledTimes(2);
    expect(console.mock.calls[1]?.[0]).toBe(
      '[sluice] 999 more failed lease releases in the last 10 s (latest: Error: store away), each lease expires after its ttl',
    );
  });
});

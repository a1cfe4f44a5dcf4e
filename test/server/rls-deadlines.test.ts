import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Deadlines, QUEUED_TIMEOUT_MS } from '../../packages/server/src/rls/deadlines.js';

// The gRPC server's deadlines (grpc-timeout) on a fake clock: queued per timeout value, each
// expiring at its own due time, never before it, and not at all once cancelled.

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('Deadlines', () => {
  it('calls of one timeout expire in arrival order, each at its own due time', () => {
    const d = new Deadlines();
    const expired: string[] = [];
    d.add(20, () => expired.push('a'));
    vi.advanceTimersByTime(5);
    d.add(20, () => expired.push('b'));
    vi.advanceTimersByTime(14);
    expect(expired).toEqual([]); // 19 ms
    vi.advanceTimersByTime(1);
    expect(expired).toEqual(['a']); // 20 ms: a's due time, b has 5 to go
    vi.advanceTimersByTime(4);
    expect(expired).toEqual(['a']);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual(['a', 'b']);
  });

  it('a cancelled deadline never expires; the ones queued behind it still do', () => {
    const d = new Deadlines();
    const expired: string[] = [];
    const first = d.add(20, () => expired.push('answered'));
    d.add(20, () => expired.push('late'));
    expect(first.queued).toBe(true);
    first.cancel();
    vi.advanceTimersByTime(20);
    expect(expired).toEqual(['late']);
  });

  it('a long timeout queued first does not hold back a shorter one', () => {
    const d = new Deadlines();
    const expired: string[] = [];
    d.add(800, () => expired.push('long'));
    d.add(20, () => expired.push('short'));
    vi.advanceTimersByTime(20);
    expect(expired).toEqual(['short']);
    vi.advanceTimersByTime(779);
    expect(expired).toEqual(['short']);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual(['short', 'long']);
  });

  it('a queue emptied and filled again is armed again', () => {
    const d = new Deadlines();
    const expired: number[] = [];
    d.add(10, () => expired.push(1));
    vi.advanceTimersByTime(10);
    d.add(10, () => expired.push(2));
    vi.advanceTimersByTime(9);
    expect(expired).toEqual([1]);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual([1, 2]);
  });

  it(`past ${QUEUED_TIMEOUT_MS} ms (or a fraction of a ms): a timer of its own, cleared by cancel`, () => {
    const d = new Deadlines();
    const expired: string[] = [];
    const long = d.add(QUEUED_TIMEOUT_MS + 1, () => expired.push('long'));
    const fraction = d.add(0.5, () => expired.push('fraction'));
    expect(long.queued).toBe(false);
    expect(fraction.queued).toBe(false);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual(['fraction']);
    long.cancel();
    vi.advanceTimersByTime(QUEUED_TIMEOUT_MS + 1);
    expect(expired).toEqual(['fraction']);
  });
});

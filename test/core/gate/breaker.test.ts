import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../../packages/core/src/gate/breaker.js';

describe('CircuitBreaker', () => {
  it('regression: a success while open (a call let through before it opened, answered late) does not close it; its probe does (it flapped)', () => {
    let clock = 0;
    const states: string[] = [];
    const breaker = new CircuitBreaker(
      2,
      1_000,
      () => clock,
      (state) => states.push(state),
    );
    expect(breaker.admit()).toBe(true);
    breaker.failure();
    breaker.failure();
    expect(breaker.state).toBe('open');
    breaker.success();
    expect(breaker.state).toBe('open');
    expect(breaker.blocking()).toBe(true);
    clock += 1_000;
    expect(breaker.blocking()).toBe(false);
    expect(breaker.admit()).toBe(true);
    expect(breaker.blocking()).toBe(true);
    expect(breaker.admit()).toBe(false);
    breaker.success();
    expect(states).toEqual(['open', 'half-open', 'closed']);
  });
});

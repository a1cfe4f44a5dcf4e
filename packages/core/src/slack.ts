/**
 * Floating-point slack, in milliseconds, for "is it time yet" comparisons; every algorithm compares
 * in time units (never in tokens, where the slack would scale with the refill rate). Times are
 * epoch-scale (1.7e12 ms, one ulp = 2.4e-4 ms) and refill steps such as 1000/7 ms are inexact,
 * so a state built by a burst of additions drifts by about 1.2e-4 ms per addition; 0.01 ms
 * absorbs that for bursts of ~80 and more, and is far below the whole milliseconds that
 * `ceilMs` reports (it subtracts the same slack, so `retryAfter` stays exact). The Lua twins
 * use the same constant, so both stores agree to the bit. Algorithms whose unit of admission is
 * shorter than 2 × EPSILON use half a unit instead ({@link slackFor}).
 */
export const EPSILON = 0.01;

/**
 * The slack of an algorithm whose unit of admission takes `unit` ms (a token's refill, an
 * emission interval): EPSILON, or half a unit when that is less. Above 50 units per ms per key,
 * EPSILON alone would be worth whole units, admitted at one instant beyond the limit
 * (`gcra({ rate: 1_000_000, period: '1s', burst: 10 })` admitted 20).
 */
export function slackFor(unit: number): number {
  return Math.min(EPSILON, unit / 2);
}

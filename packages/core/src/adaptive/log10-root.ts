/**
 * Netflix concurrency-limits' `Log10RootFunction`, which Vegas's alpha, beta, threshold, increase
 * and decrease are built on: `max(1, ⌊log10(n)⌋)` for n < 1000, `⌊√n⌋` from 1000 on (the "root":
 * past 1000, log10 steps become too small to move the limit). Whole numbers, at least 1.
 *
 *   n:        1–99 → 1,  100–999 → 2,  1000 → 31,  4000 → 63
 */
export function log10Root(n: number): number {
  const whole = Math.trunc(n);
  return whole < 1000 ? Math.max(1, Math.trunc(Math.log10(whole))) : Math.trunc(Math.sqrt(whole));
}

/**
 * Forgets the configuration warnings sluice has given in this test process. sluice gives each
 * warning code once per process (kept on `globalThis` under `Symbol.for('sluice.warned')`, so two
 * copies of @sluice/core in one app agree); a test that expects a warning starts from none. Not
 * an API: apps have no reason to hear a warning twice.
 */
export function forgetWarnings(): void {
  (globalThis as Record<symbol, Set<string> | undefined>)[Symbol.for('sluice.warned')]?.clear();
}

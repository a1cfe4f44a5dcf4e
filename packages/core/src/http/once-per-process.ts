/**
 * The configuration warnings already given in this process, by code. Kept on `globalThis` under a
 * registered symbol rather than in this module: an app that loads both builds of @sluice/core
 * (its ES module and CommonJS files, through two sluice packages) still hears each warning once.
 */
const WARNED = Symbol.for('sluice.warned');

/**
 * Whether `code` is given for the first time in this process (and marks it given). Every
 * middleware of every adapter asks here, so a mistake two middlewares see (an app-wide and a
 * route's `byIp()` behind an untrusted proxy) is told once, not once per middleware.
 */
export function firstInProcess(code: string): boolean {
  const shared = globalThis as Record<symbol, Set<string> | undefined>;
  let warned = shared[WARNED];
  if (warned === undefined) {
    warned = new Set();
    shared[WARNED] = warned;
  }
  if (warned.has(code)) return false;
  warned.add(code);
  return true;
}

/**
 * Browser stand-ins for the Node built-ins that @sluice/core's index imports for code the page
 * never runs (load-shedding signals, lease ids, key hashing, the HTTP limiter's delay). Vite aliases
 * `node:crypto`, `node:perf_hooks` and `node:timers/promises` here so the page can import core
 * whole, as users do; calling any of them fails loudly instead of silently doing something else,
 * except `randomBytes`, which core's lease ids call when their module loads (the dev server loads
 * every module; the production build drops the unused ones).
 */
const unavailable = (name: string) => (): never => {
  throw new Error(`${name} is not available in the playground (a Node built-in)`);
};

export const createHash = unavailable('node:crypto createHash');
export function randomBytes(size: number): { toString(encoding: 'base64url' | 'hex'): string } {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(size));
  return {
    toString(encoding) {
      if (encoding === 'hex') return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
      if (encoding === 'base64url') {
        return btoa(String.fromCharCode(...bytes))
          .replace(/\+/g, '-')
          .replace(/\//g, '_')
          .replace(/=+$/, '');
      }
      throw new Error(
        `randomBytes().toString(${JSON.stringify(encoding)}) is not available in the playground`,
      );
    },
  };
}
export const monitorEventLoopDelay = unavailable('node:perf_hooks monitorEventLoopDelay');
export const setTimeout = unavailable('node:timers/promises setTimeout');
export const performance = globalThis.performance;

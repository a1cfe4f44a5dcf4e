import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { buildIfStale } from '../../setup/built-packages.js';

const root = join(import.meta.dirname, '..', '..', '..');

/**
 * Builds the packages whose dist is older than their sources, in order (a dependency first): CI
 * has just built them, so nothing happens there. The runtime test files run in parallel and a
 * build empties dist first, so they build one at a time: a lock directory (mkdir is atomic),
 * taken over when its holder left it for 10 minutes.
 */
export async function ensureBuilt(names: readonly string[]): Promise<void> {
  const lock = join(root, 'test', '.tmp', 'runtimes-build.lock');
  mkdirSync(join(lock, '..'), { recursive: true });
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now()) > 600_000) {
        rmSync(lock, { recursive: true, force: true });
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  try {
    for (const name of names) await buildIfStale(join(root, 'packages', name));
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..', '..');

/** The newest modification time of the files under `path`. */
function newest(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name))));
}

/** Whether a package's dist is older than its sources (or missing). */
function stale(dir: string): boolean {
  const dist = join(dir, 'dist');
  const sources = Math.max(newest(join(dir, 'src')), newest(join(dir, 'package.json')));
  const built = existsSync(dist) ? readdirSync(dist).map((name) => statSync(join(dist, name)).mtimeMs) : [];
  return built.length === 0 || Math.min(...built) <= sources;
}

/** pnpm as this run was started (`pnpm test`), else the one on PATH. */
function pnpm(args: string[], cwd: string) {
  const execPath = process.env.npm_execpath;
  return execPath !== undefined && /pnpm/.test(execPath)
    ? run(process.execPath, [execPath, ...args], { cwd })
    : run('pnpm', args, { cwd });
}

/**
 * Builds the packages (in order: a dependency first) whose dist is older than their sources, as
 * test/consumer does (CI has just built them: nothing to do). Test files run in parallel and a
 * build empties dist first, so one build at a time across processes: a lock directory (mkdir is
 * atomic), taken over when its holder left it for 10 minutes.
 */
export async function ensureBuilt(names: readonly string[]): Promise<void> {
  const dirs = names.map((name) => join(root, 'packages', name));
  if (!dirs.some(stale)) return;
  const lock = join(root, 'test', '.tmp', 'build.lock');
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
    for (const dir of dirs) if (stale(dir)) await pnpm(['run', 'build'], dir);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

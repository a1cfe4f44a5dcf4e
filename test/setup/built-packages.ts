// Building a workspace package for the tests that run its published files (dist), not its sources:
// the consumer test and the entry-point tests. A package whose dist is newer than its sources is
// left as it is (CI, or `pnpm build`, has just built it).
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

export const run = promisify(execFile);

/** pnpm as this run was started (`pnpm test`, `npx pnpm@… test`), else the one on PATH. */
export function pnpm(args: string[], cwd: string) {
  const execPath = process.env.npm_execpath;
  return execPath !== undefined && /pnpm/.test(execPath)
    ? run(process.execPath, [execPath, ...args], { cwd })
    : run('pnpm', args, { cwd });
}

/** The newest modification time of the files under `path`. */
function newest(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name))));
}

/** Builds the package in `dir` unless its dist is newer than its sources. */
export async function buildIfStale(dir: string): Promise<void> {
  const dist = join(dir, 'dist');
  const sources = Math.max(newest(join(dir, 'src')), newest(join(dir, 'package.json')));
  const built = existsSync(dist) ? readdirSync(dist).map((name) => statSync(join(dist, name)).mtimeMs) : [];
  if (built.length > 0 && Math.min(...built) > sources) return;
  await pnpm(['run', 'build'], dir);
}

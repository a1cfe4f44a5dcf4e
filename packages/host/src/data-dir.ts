import { mkdirSync, readdirSync, statSync } from 'node:fs';
import { ErrorCode, SluiceError } from '@sluice/core';

/** The files of an LMDB environment in a directory (LMDB's own names). */
export const ENV_FILES: readonly string[] = ['data.mdb', 'lock.mdb'];

/**
 * What a freshly made filesystem puts at its root: a volume mounted as the data directory holds
 * it, and it is no sign of someone else's data.
 */
const TOLERATED: readonly string[] = ['lost+found'];

/**
 * The name's start of the probe file state-env.ts makes for an instant in the directory (does its
 * filesystem keep files sparse?): another process opening the directory meanwhile, or a probe a
 * crash left, is no sign of someone else's data.
 */
export const PROBE_PREFIX = '.sluice-sparse-probe-';

/**
 * The name's start of the directory in which state-env.ts makes a new environment before linking
 * its data file into place: another process opening the directory meanwhile, or one a crash left
 * (a few KiB), is no sign of someone else's data.
 */
export const MAKING_PREFIX = '.sluice-making-';

/**
 * The directory of the state's shard `index` ≥ 1 inside the data directory (state-shards.ts): the
 * first shard's environment is the directory's own two files, so that a directory made before
 * shards existed reads as one shard. Such a subdirectory is no sign of someone else's data.
 */
export function shardDirName(index: number): string {
  return `shard-${index}`;
}

const SHARD_DIR = /^shard-[1-9][0-9]*$/;

/** The index of a shard's directory from its name (`shard-3`: 3), else `undefined`. */
export function shardDirIndex(name: string): number | undefined {
  return SHARD_DIR.test(name) ? Number(name.slice(6)) : undefined;
}

/**
 * Who opens an environment, for its errors: the option that names the directory (`dataDir` for
 * sluice-server, `path` for HostStore), what the environment is called (`sluice-server`) and what
 * its own former versions may have left at the path (only sluice-server has a past to explain).
 */
export interface EnvOwner {
  readonly option: string;
  readonly name: string;
  /** Said after "is not a directory": what a former version of this owner may have left there. */
  readonly notDirectoryHint?: string;
  /** Said of an LMDB environment with foreign databases: which former formats look like that. */
  readonly foreignEnvHint?: string;
}

/**
 * A coded error about the directory `dir` that says what was found there and what is accepted
 * (`advice`: what to do instead, where the usual advice does not fit: a directory of this owner's
 * whose shards do not add up).
 */
export function dataDirError(owner: EnvOwner, dir: string, problem: string, advice?: string): SluiceError {
  return new SluiceError(
    ErrorCode.INVALID_OPTION,
    `${owner.option} ${dir} ${problem}; ${advice ?? `give an empty directory, a path that does not exist yet, or a ${owner.name} environment's directory`}`,
    { option: owner.option, value: dir },
  );
}

/**
 * Makes sure `dir` can hold an LMDB environment: creates it (and its parents) when missing, and
 * refuses a path that is not a directory or a directory holding anything but an LMDB
 * environment's two files (whose contents `openStateEnv` checks next) and shards' directories. An existing empty
 * directory, the usual way a service gets one (a container volume, `mktemp -d`), is used as is.
 */
export function prepareDataDir(owner: EnvOwner, dir: string): void {
  let isDirectory: boolean;
  try {
    isDirectory = statSync(dir).isDirectory();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw fileSystemError(owner, dir, err);
    try {
      mkdirSync(dir, { recursive: true });
    } catch (mkdirErr) {
      throw fileSystemError(owner, dir, mkdirErr);
    }
    return;
  }
  if (!isDirectory) {
    const hint = owner.notDirectoryHint === undefined ? '' : ` (${owner.notDirectoryHint})`;
    throw dataDirError(owner, dir, `is not a directory${hint}`);
  }
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    throw fileSystemError(owner, dir, err);
  }
  const foreign = names.filter(
    (name) =>
      !ENV_FILES.includes(name) &&
      !TOLERATED.includes(name) &&
      !name.startsWith(PROBE_PREFIX) &&
      !name.startsWith(MAKING_PREFIX) &&
      !SHARD_DIR.test(name),
  );
  if (foreign.length > 0) {
    const shown =
      foreign.slice(0, 5).join(', ') + (foreign.length > 5 ? `, … (${foreign.length} in all)` : '');
    throw dataDirError(owner, dir, `holds files that are not a ${owner.name} environment (${shown})`);
  }
}

/**
 * The filesystem refused to look at or create `dir` (ENOTDIR: a parent is a file; EACCES; ELOOP,
 * ...): a coded error about the option naming the OS error's code, the original as its cause.
 */
function fileSystemError(owner: EnvOwner, dir: string, err: unknown): SluiceError {
  const code = (err as NodeJS.ErrnoException).code ?? 'unknown error';
  const text = err instanceof Error ? err.message : String(err);
  const detail = text.includes(code) ? text : `${code}: ${text}`;
  return new SluiceError(
    ErrorCode.INVALID_OPTION,
    `${owner.option} ${dir} cannot be opened or created as a directory (${detail}); give a directory this process can create or open`,
    { option: owner.option, value: dir, cause: err },
  );
}

import {
  closeSync,
  existsSync,
  fstatSync,
  ftruncateSync,
  linkSync,
  mkdirSync,
  openSync,
  rmSync,
  statSync,
} from 'node:fs';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import { open, type RootDatabase, type RootDatabaseOptions } from 'lmdb';
import {
  dataDirError,
  ENV_FILES,
  type EnvOwner,
  MAKING_PREFIX,
  PROBE_PREFIX,
  prepareDataDir,
} from './data-dir.js';
import { ONLY_SHARD, type ShardPlace } from './shard-of.js';

/**
 * The stored layout this version reads and writes, kept under `format` in the `meta` database.
 * 1 (sluice-server 0.1): one unnamed database keyed by `prefix \0 key`, no marker. 2: the named
 * databases below, keys shortened to an 8-byte digest of their prefix (stored-key.ts), an
 * expiry index.
 */
export const FORMAT = 2;

/**
 * What LMDB holds per key: the algorithm's state, the server time at which it is as good as new,
 * and the second under which the expiry index lists it (expiry-index.ts: never later than
 * `expiresAt`'s own second).
 */
export type StoredValue = readonly [state: unknown, expiresAt: number, indexed: number];

/**
 * The part of an lmdb-js database this package uses. Declared here rather than taken from lmdb's
 * types so that the published declarations never import 'lmdb': its index.d.ts ends in
 * `export =`, which a consumer's `tsc` refuses (TS1203) under ES module settings without
 * skipLibCheck. lmdb's Database and RootDatabase satisfy it (openStateEnv assigns them).
 */
export interface LmdbDatabase<V> {
  get(key: Buffer): V | undefined;
  putSync(key: Buffer, value: V): unknown;
  removeSync(key: Buffer): unknown;
  getKeys(options: { end?: Buffer; limit?: number }): Iterable<Buffer>;
  getStats(): unknown;
}

/** The root of an lmdb-js environment, as this package uses it. */
export interface LmdbRoot extends LmdbDatabase<Buffer> {
  transactionSync<T>(action: () => T): T;
  getWriteTxnId(): number;
  resetReadTxn(): void;
  readerCheck(): number;
  close(): Promise<void>;
}

/** Keys stored in an environment's state (committed). */
export function entryCount(env: StateEnv): number {
  return (env.state.getStats() as { entryCount: number }).entryCount;
}

/** The environment's databases. */
export interface StateEnv {
  readonly root: LmdbRoot;
  /** stored key (stored-key.ts) → [state, expiresAt, indexed second] (msgpack). */
  readonly state: LmdbDatabase<StoredValue>;
  /** expiry second (6 bytes, big-endian) + stored key → nothing: the keys in the order they expire. */
  readonly expiry: LmdbDatabase<Buffer>;
  /**
   * Where this environment sits among the shards (state-shards.ts) of its directory's state, as it
   * records it: the count it was made with (1 for one made before shards existed) and its index
   * (0: the directory's own environment).
   */
  readonly place: ShardPlace;
  /** Whether this open set the environment up (it held nothing of sluice's before). */
  readonly fresh: boolean;
}

const DATABASES = ['meta', 'state', 'expiry'];

/**
 * Address space reserved for the map (not disk: the file grows with the pages used). Fixed and
 * large, so that no process has to remap while others hold the environment open. Not a bound on
 * the file: lmdb-js grows the map when it is full (what bounds the file is the number of keys,
 * HostStore's `maxKeys`, and the expiry sweep).
 */
const MAP_SIZE = 2 ** 36;

/** Bytes the sparse-file probe stretches its file to (see {@link keepsFilesSparse}). */
const PROBE_SIZE = 2 ** 24;

/**
 * Whether LMDB writes through a write map in `dir` (see openStateEnv): on Linux, when the
 * directory's filesystem keeps a stretched file sparse. ext4, XFS, btrfs, tmpfs and overlayfs do;
 * vfat/exFAT and Windows drives mounted into Linux (WSL's drvfs, 9p) do not, and there the file
 * would take the map's 64 GiB of disk (or fail to open). NTFS and HFS+ natively do not either
 * (LMDB does not mark the file sparse), and lmdb-js warns write maps may be slower on Windows.
 * Elsewhere LMDB writes with pwrite, as it always did.
 */
function writeMapIn(dir: string): boolean {
  return process.platform === 'linux' && keepsFilesSparse(dir);
}

/**
 * Stretches a probe file in `dir` to {@link PROBE_SIZE} and asks how many blocks it took: a
 * filesystem that keeps it sparse allocates (almost) none. The probe is removed at once; its name
 * (PROBE_PREFIX) is one `prepareDataDir` tolerates, should another process look meanwhile or a
 * crash leave it. Any failure answers no: LMDB then writes without the map.
 */
function keepsFilesSparse(dir: string): boolean {
  const probe = join(dir, `${PROBE_PREFIX}${process.pid}-${threadId}`);
  let fd: number | undefined;
  try {
    fd = openSync(probe, 'w');
    ftruncateSync(fd, PROBE_SIZE);
    return fstatSync(fd).blocks * 512 < PROBE_SIZE / 16;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) {
      closeSync(fd);
      rmSync(probe, { force: true });
    }
  }
}

/**
 * Opens (creating when new) an LMDB environment of sluice's state in `dir`, refusing anything that
 * is not one of this format before writing a byte into it. Several processes may open it at once,
 * even all at once on an empty directory: with the write map a new environment is made aside and
 * linked into place whole ({@link makeAside}); without it the first to set it up does so in place
 * (LMDB serialises the set-up with the others' write transactions; no run of the same race failed
 * that way).
 *
 * Always `noSync`, and on Linux with a write map where the filesystem keeps files sparse
 * ({@link writeMapIn}): a transaction writes its
 * pages straight into the mapped file, which is the OS page cache, and its commit makes no system
 * call; StateDb flushes the environment (mdb_env_sync, an msync) as its durability setting says.
 * Without the write map LMDB copies every dirty page to the file with pwrite/writev at each
 * commit: about one system call per decision when each turn's decisions touch different pages
 * (random keys), as many as the socket's own read and write. What a commit survives is the same
 * either way: the pages are the kernel's once written, so a killed process loses nothing
 * committed. Two costs: LMDB sets the file's length to the map's (`MAP_SIZE`, 64 GiB) at open, a
 * sparse file whose disk use is the pages written (`du`, not `ls -l`); and a full disk stops the
 * process with SIGBUS when a write reaches an unallocated page (without the write map it failed
 * too: lmdb-js aborted the process soon after the first failed commit).
 */
export function openStateEnv(owner: EnvOwner, dir: string, place: ShardPlace = ONLY_SHARD): StateEnv {
  prepareDataDir(owner, dir);
  const writeMap = writeMapIn(dir);
  const data = join(dir, ENV_FILES[0]!);
  const made = writeMap && !existsSync(data) && makeAside(owner, dir, place);
  // The write map stretches the file to the map's size at open: an environment already there and
  // not stretched yet (another program's, or one opened without the map) is checked read-only
  // first, so that another program's keeps its size. Once stretched it is ours and is not
  // opened twice: a read-only open shares its environment with any thread of this process that
  // opens the same file meanwhile, which could then not write. An empty file has nothing to keep.
  const size = writeMap && existsSync(data) ? statSync(data).size : 0;
  if (size > 0 && size < MAP_SIZE) {
    const existing = openRoot(owner, dir, { readOnly: true });
    try {
      checkContents(owner, dir, existing, undefined);
    } finally {
      void existing.close();
    }
  }
  const root = openRoot(owner, dir, { noSync: true, useWritemap: writeMap });
  try {
    const { stored, fresh } = checkContents(owner, dir, root, place);
    return { root, ...openDatabases(root), place: stored, fresh: fresh || made };
  } catch (err) {
    void root.close();
    throw err;
  }
}

function openDatabases(root: RootDatabase<Buffer, Buffer>): Pick<StateEnv, 'state' | 'expiry'> {
  const state = root.openDB<StoredValue, Buffer>({
    name: 'state',
    keyEncoding: 'binary',
    encoding: 'msgpack',
  });
  const expiry = root.openDB<Buffer, Buffer>({ name: 'expiry', keyEncoding: 'binary', encoding: 'binary' });
  return { state, expiry };
}

/**
 * Makes a new environment of `place` in a directory of this thread's own inside `dir`, and links
 * its data file into `dir` unless another process linked one first. Answers whether this call's
 * environment is the one in place.
 *
 * Why: LMDB (lmdb-js 3.5.6) corrupts an environment that two processes create at once with the
 * write map. Of 4 processes opening a new directory of 8 shards, about one run in ten ended with
 * one process killed by SIGSEGV and the others finding the meta database's `format` key listed in
 * a shard's root database (test/host/concurrent-open.test.ts). Without the write map, or on
 * environments that exist, the same runs never failed. Made aside, an environment is created by
 * one process alone, and appears in place whole: set up, every database made, its file stretched.
 * (The likely cause is the open race the host README names as a known issue: a process opening
 * the environment resets the shared transaction counter while another commits the set-up, and a
 * page still in use is handed out again.)
 * A link is atomic and never replaces a file, so of several processes the first decides; the
 * others drop theirs and open it. The environment made aside is closed before the link: lmdb-js
 * closes one that has only written synchronously at once. Its lock file stays aside; LMDB makes
 * `dir`'s at the first open.
 *
 * A file system that refuses the link (no hard links), or a directory this process cannot write
 * to, gets the environment created in place, as before (and there LMDB's refusal, coded). A crash
 * while making leaves the directory aside, which is tolerated (MAKING_PREFIX) and removed by the
 * next start of the same process and thread ids.
 */
function makeAside(owner: EnvOwner, dir: string, place: ShardPlace): boolean {
  const aside = join(dir, `${MAKING_PREFIX}${process.pid}-${threadId}`);
  try {
    rmSync(aside, { recursive: true, force: true });
    mkdirSync(aside);
  } catch {
    // A directory this process cannot write to: the open in place says so, with its coded error.
    return false;
  }
  try {
    const root = openRoot(owner, aside, { noSync: true, useWritemap: true });
    try {
      checkContents(owner, aside, root, place);
      openDatabases(root);
    } finally {
      void root.close();
    }
    try {
      linkSync(join(aside, ENV_FILES[0]!), join(dir, ENV_FILES[0]!));
      return true;
    } catch {
      // EEXIST: another process linked its environment first. Anything else: no hard links here.
      return false;
    }
  } finally {
    rmSync(aside, { recursive: true, force: true });
  }
}

function openRoot(owner: EnvOwner, dir: string, mode: RootDatabaseOptions): RootDatabase<Buffer, Buffer> {
  try {
    return open<Buffer, Buffer>({
      path: dir,
      noSubdir: false,
      mapSize: MAP_SIZE,
      keyEncoding: 'binary',
      encoding: 'binary',
      ...mode,
    });
  } catch (err) {
    throw dataDirError(
      owner,
      dir,
      `holds files LMDB cannot open as an environment (${(err as Error).message})`,
    );
  }
}

/**
 * Refuses an environment with databases of its own or of another format. Writable (`place`
 * given): marks a new one with this format and its place among the shards, in one transaction,
 * so that of several processes opening a new directory at once the first decides. Returns the
 * place recorded (the only shard read-only, or for an environment made before shards were
 * recorded) and whether this call set the environment up.
 */
function checkContents(
  owner: EnvOwner,
  dir: string,
  root: RootDatabase<Buffer, Buffer>,
  place: ShardPlace | undefined,
): { stored: ShardPlace; fresh: boolean } {
  const writable = place !== undefined;
  // The root database lists the named ones (lmdb-js ends their names with a NUL byte).
  const names = [...root.getKeys({})].map((key) => key.toString('latin1').replace(/\0$/, ''));
  const foreign = names.filter((name) => !DATABASES.includes(name));
  if (foreign.length > 0) {
    throw dataDirError(
      owner,
      dir,
      `holds an LMDB environment that is not a ${owner.name} environment of format ${FORMAT} (${owner.foreignEnvHint === undefined ? '' : `${owner.foreignEnvHint}, or `}another program's data: keys such as ${JSON.stringify(foreign[0]!.slice(0, 40))})`,
    );
  }
  // Read-only, a database not there yet cannot be opened: a new environment, nothing to check.
  if (!writable && !names.includes('meta')) return { stored: ONLY_SHARD, fresh: false };
  const meta = root.openDB<number, string>({
    name: 'meta',
    keyEncoding: 'ordered-binary',
    encoding: 'msgpack',
  });
  const check = (): { stored: ShardPlace; fresh: boolean } => {
    const format = meta.get('format');
    if (format === undefined && writable) {
      meta.putSync('format', FORMAT);
      if (place.count > 1) meta.putSync('shards', place.count);
      if (place.index > 0) meta.putSync('shard', place.index);
      return { stored: place, fresh: true };
    }
    if (format !== undefined && format !== FORMAT) {
      throw dataDirError(
        owner,
        dir,
        `holds a ${owner.name} environment of format ${format}; this version reads format ${FORMAT}`,
      );
    }
    return { stored: { index: meta.get('shard') ?? 0, count: meta.get('shards') ?? 1 }, fresh: false };
  };
  return writable ? root.transactionSync(check) : check();
}

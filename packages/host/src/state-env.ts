import { open, type RootDatabase } from 'lmdb';
import { dataDirError, type EnvOwner, prepareDataDir } from './data-dir.js';

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

/** The environment's databases. */
export interface StateEnv {
  readonly root: LmdbRoot;
  /** stored key (stored-key.ts) → [state, expiresAt, indexed second] (msgpack). */
  readonly state: LmdbDatabase<StoredValue>;
  /** expiry second (6 bytes, big-endian) + stored key → nothing: the keys in the order they expire. */
  readonly expiry: LmdbDatabase<Buffer>;
}

const DATABASES = ['meta', 'state', 'expiry'];

/**
 * Address space reserved for the map (not disk: the file grows with the pages used). Fixed and
 * large, so that no process has to remap while others hold the environment open. Not a bound on
 * the file: lmdb-js grows the map when it is full (what bounds the file is the number of keys,
 * HostStore's `maxKeys`, and the expiry sweep).
 */
const MAP_SIZE = 2 ** 36;

/**
 * Opens (creating when new) an LMDB environment of sluice's state in `dir`, refusing anything that
 * is not one of this format before writing a byte into it. Always `noSync`: commits reach the OS
 * page cache, and StateDb flushes the environment (mdb_env_sync) as its durability setting says.
 * Several processes may open it at once, even all at once on an empty directory (LMDB serialises
 * their write transactions, the first to set it up included).
 */
export function openStateEnv(owner: EnvOwner, dir: string): StateEnv {
  prepareDataDir(owner, dir);
  let root: RootDatabase<Buffer, Buffer>;
  try {
    root = open<Buffer, Buffer>({
      path: dir,
      noSubdir: false,
      noSync: true,
      mapSize: MAP_SIZE,
      keyEncoding: 'binary',
      encoding: 'binary',
    });
  } catch (err) {
    throw dataDirError(
      owner,
      dir,
      `holds files LMDB cannot open as an environment (${(err as Error).message})`,
    );
  }
  try {
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
    const meta = root.openDB<number, string>({
      name: 'meta',
      keyEncoding: 'ordered-binary',
      encoding: 'msgpack',
    });
    root.transactionSync(() => {
      const format = meta.get('format');
      if (format === undefined) meta.putSync('format', FORMAT);
      else if (format !== FORMAT) {
        throw dataDirError(
          owner,
          dir,
          `holds a ${owner.name} environment of format ${format}; this version reads format ${FORMAT}`,
        );
      }
    });
    const state = root.openDB<StoredValue, Buffer>({
      name: 'state',
      keyEncoding: 'binary',
      encoding: 'msgpack',
    });
    const expiry = root.openDB<Buffer, Buffer>({ name: 'expiry', keyEncoding: 'binary', encoding: 'binary' });
    return { root, state, expiry };
  } catch (err) {
    void root.close();
    throw err;
  }
}

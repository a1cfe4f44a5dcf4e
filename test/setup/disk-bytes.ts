import { statSync } from 'node:fs';

/**
 * The bytes a file holds on disk (its allocated blocks), not its length: on Linux LMDB's data.mdb
 * is a sparse file as long as the map (64 GiB, the write map sets it so at open), and what it
 * really takes is the pages written, which is what a bound on its size is about.
 */
export function diskBytes(file: string): number {
  return statSync(file).blocks * 512;
}

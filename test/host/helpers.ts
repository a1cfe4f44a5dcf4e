import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HostStore, type HostStoreOptions } from '@sluice/host';
import { afterAll } from 'vitest';

/** A fresh directory for an LMDB environment, removed after the file's tests. */
export function tempPath(label = 'host'): string {
  const dir = mkdtempSync(join(tmpdir(), `sluice-${label}-`));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A HostStore on a fresh directory, saying nothing on the console (failures fail the tests). */
export function hostStore(options: Partial<HostStoreOptions> = {}): HostStore {
  return new HostStore({ path: tempPath(), logger: false, ...options });
}

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { moduleExports } from '../setup/module-exports.js';

/** What `@sluice/redis` exports, types included: what apps use. Tests reach internals by their source path. */
const ROOT = [
  'BreakerOptions',
  'BreakerState',
  'FailurePolicy',
  'NodeRedisClient',
  'RedisLeases',
  'RedisStore',
  'RedisStoreErrorEvent',
  'RedisStoreOptions',
  'StoreLogger',
  'SyncedStore',
  'SyncedStoreOptions',
];

const source = (path: string) => fileURLToPath(new URL(`../../packages/redis/src/${path}`, import.meta.url));
const ROOT_FILE = source('index.ts');
const exportsOf = moduleExports([ROOT_FILE]);

describe('the public boundary of @sluice/redis', () => {
  it('the root exports exactly the pinned names, types included', () => {
    expect(exportsOf(ROOT_FILE)).toEqual([...ROOT].sort());
  });

  it('has no gate entry: the failure handling is @sluice/core/gate (issue 35)', () => {
    const manifest = JSON.parse(readFileSync(source('../package.json'), 'utf8')) as {
      exports: Record<string, unknown>;
    };
    expect(Object.keys(manifest.exports)).toEqual(['.', './package.json']);
  });
});

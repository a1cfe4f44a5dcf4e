import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { moduleExports } from '../setup/module-exports.js';

/** What `@sluice/host` exports, types included: what apps use. Tests reach internals by their source path. */
const ROOT = ['Durability', 'HostLeases', 'HostStore', 'HostStoreLogger', 'HostStoreOptions'];

/** What `@sluice/host/state` exports: the LMDB state layer sluice-server runs its commands on. */
const STATE = [
  'Durability',
  'EnvOwner',
  'MAX_KEY_BYTES',
  'MAX_SHARDS',
  'Queued',
  'StateBatch',
  'StateDb',
  'StateDbOptions',
  'StateTxn',
  'StateWriter',
  'acquireIn',
  'chargeIn',
  'checkIn',
  'openShards',
  'openStateEnv',
  'peekIn',
  'peekLeaseIn',
  'refundIn',
  'releaseIn',
  'resetIn',
  'shardOf',
  'storedId',
  'storedIdOfText',
];

const source = (path: string) => fileURLToPath(new URL(`../../packages/host/src/${path}`, import.meta.url));
const ROOT_FILE = source('index.ts');
const STATE_FILE = source('state.ts');
const exportsOf = moduleExports([ROOT_FILE, STATE_FILE]);

describe('the public boundary of @sluice/host', () => {
  it('the root exports exactly the pinned names, types included', () => {
    expect(exportsOf(ROOT_FILE)).toEqual([...ROOT].sort());
  });

  it('@sluice/host/state exports exactly the pinned names, types included', () => {
    expect(exportsOf(STATE_FILE)).toEqual([...STATE].sort());
  });

  it('imports only @sluice/core (and its adapter kit), lmdb and node: nothing of Redis, the server or a framework', () => {
    const outside = new Set<string>();
    for (const name of readdirSync(source(''))) {
      for (const [, from] of readFileSync(source(name), 'utf8').matchAll(/from '([^']+)'/g)) {
        if (!/^(\.\/|node:|lmdb$|@sluice\/core(\/adapter)?$)/.test(from!)) outside.add(`${name}: ${from}`);
      }
    }
    expect([...outside]).toEqual([]);
  });
});

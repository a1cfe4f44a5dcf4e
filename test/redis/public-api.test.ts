import { readdirSync, readFileSync } from 'node:fs';
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

/** What `@sluice/redis/gate` exports: the failure handling of a store on a remote backend (RedisStore's, ServerStore's). */
const GATE = [
  'BreakerOptions',
  'BreakerState',
  'CallGate',
  'FailureAnswers',
  'FailureOptions',
  'FailurePolicy',
  'GateClient',
  'GateOptions',
  'LeaseFailureAnswers',
  'Operation',
  'RemoteCalls',
  'ResolvedFailureOptions',
  'StoreErrorEvent',
  'StoreLogger',
  'remoteCalls',
  'resolveFailureOptions',
];

const source = (path: string) => fileURLToPath(new URL(`../../packages/redis/src/${path}`, import.meta.url));
const ROOT_FILE = source('index.ts');
const GATE_FILE = source('gate.ts');
const exportsOf = moduleExports([ROOT_FILE, GATE_FILE]);

describe('the public boundary of @sluice/redis', () => {
  it('the root exports exactly the pinned names, types included', () => {
    expect(exportsOf(ROOT_FILE)).toEqual([...ROOT].sort());
  });

  it('@sluice/redis/gate exports exactly the pinned names, types included', () => {
    expect(exportsOf(GATE_FILE)).toEqual([...GATE].sort());
  });

  it('the gate is store-neutral: src/gate/ imports only itself and @sluice/core (no Redis client, no node-redis shim)', () => {
    const dir = source('gate');
    const outside: string[] = [];
    for (const name of readdirSync(dir)) {
      const text = readFileSync(`${dir}/${name}`, 'utf8');
      for (const [, from] of text.matchAll(/from '([^']+)'/g)) {
        if (!from!.startsWith('./') && from !== '@sluice/core' && from !== '@sluice/core/adapter')
          outside.push(`${name}: ${from}`);
      }
    }
    expect(outside).toEqual([]);
    const entry = readFileSync(GATE_FILE, 'utf8');
    expect(
      [...entry.matchAll(/from '([^']+)'/g)]
        .map(([, from]) => from)
        .filter((from) => !from!.startsWith('./gate/')),
    ).toEqual([]);
  });
});

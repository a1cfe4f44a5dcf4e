/**
 * `@sluice/server/client` (issue 25 §3): ServerStore for an app that only talks to a sluice-server,
 * without loading LMDB (a native module) or the server. Checked on the built files, as an app
 * loads them: an ES module import under a resolve hook that refuses `lmdb` and `@sluice/host`, and
 * a CommonJS require whose module cache is read afterwards. The root entry point, which does load
 * them, is the control: each check fails on it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, run } from '../setup/built-packages.js';
import { moduleExports } from '../setup/module-exports.js';

const packages = fileURLToPath(new URL('../../packages/', import.meta.url));
const server = join(packages, 'server');
let hooks: string;

/** What `@sluice/server/client` exports, types included. */
const CLIENT = [
  'HashRing',
  'ServerLeases',
  'ServerStore',
  'ServerStoreErrorEvent',
  'ServerStoreOptions',
  'VIRTUAL_NODES',
];

/** The modules an app must not load to use the client. */
const SERVER_ONLY = /(^|[\\/])(lmdb|@sluice[\\/]host|packages[\\/]host)([\\/]|$)/;

beforeAll(async () => {
  // The client's dependencies, built as their own files (the package links resolve to their dist).
  for (const name of ['core', 'redis', 'host', 'server']) await buildIfStale(join(packages, name));
  hooks = mkdtempSync(join(tmpdir(), 'sluice-client-entry-'));
  writeFileSync(
    join(hooks, 'refuse.mjs'),
    `export async function resolve(specifier, context, next) {
  if (/^(lmdb|@sluice\\/host)(\\/|$)/.test(specifier)) throw new Error('loaded ' + specifier);
  return next(specifier, context);
}
`,
  );
  writeFileSync(
    join(hooks, 'register.mjs'),
    `import { register } from 'node:module';
register(${JSON.stringify(pathToFileURL(join(hooks, 'refuse.mjs')).href)});
`,
  );
}, 300_000);

afterAll(() => {
  if (hooks !== undefined) rmSync(hooks, { recursive: true, force: true });
});

/** Imports `entry` (as an ES module) from an app beside the package; the error's message, or 'ok'. */
async function importUnderHook(entry: string): Promise<string> {
  const code = `const m = await import(${JSON.stringify(entry)}); if (typeof m.ServerStore !== 'function') throw new Error('no ServerStore'); console.log('ok');`;
  try {
    const { stdout } = await run(
      process.execPath,
      ['--import', pathToFileURL(join(hooks, 'register.mjs')).href, '--input-type=module', '-e', code],
      { cwd: server },
    );
    return stdout.trim();
  } catch (error) {
    return String((error as { stderr?: string }).stderr ?? error);
  }
}

/** Requires `entry` (CommonJS); the loaded files that are LMDB's or the host store's. */
async function requiredServerOnly(entry: string): Promise<string[]> {
  const code = `const m = require(${JSON.stringify(entry)});
if (typeof m.ServerStore !== 'function') throw new Error('no ServerStore');
console.log(JSON.stringify(Object.keys(require.cache)));`;
  const { stdout } = await run(process.execPath, ['-e', code], { cwd: server });
  return (JSON.parse(stdout) as string[]).filter((file) => SERVER_ONLY.test(file));
}

describe('@sluice/server/client: ServerStore without LMDB', () => {
  it('exports ServerStore, its options and types, and nothing of the server', () => {
    const file = join(server, 'src', 'client.ts');
    expect(moduleExports([file])(file)).toEqual(CLIENT);
  });

  it('imported as an ES module, it never resolves lmdb nor @sluice/host (the root entry does)', async () => {
    expect(await importUnderHook('@sluice/server/client')).toBe('ok');
    expect(await importUnderHook('@sluice/server')).toMatch(/loaded (lmdb|@sluice\/host)/);
  }, 60_000);

  it('required as CommonJS, it loads no file of lmdb nor of @sluice/host (the root entry does)', async () => {
    expect(await requiredServerOnly('@sluice/server/client')).toEqual([]);
    expect((await requiredServerOnly('@sluice/server')).length).toBeGreaterThan(0);
  }, 60_000);

  it('one ServerStore class, whichever entry loaded it (instanceof holds across them)', async () => {
    const code = `const a = require('@sluice/server/client'); const b = require('@sluice/server');
const c = await import('@sluice/server/client'); const d = await import('@sluice/server');
console.log(JSON.stringify([a.ServerStore === b.ServerStore, c.ServerStore === d.ServerStore]));`;
    const { stdout } = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { createRequire } from 'node:module'; const require = createRequire(process.cwd() + '/'); ${code}`,
      ],
      {
        cwd: server,
      },
    );
    expect(JSON.parse(stdout)).toEqual([true, true]);
  }, 60_000);
});

/**
 * The packages as a consumer installs them: each non-private package under packages/ is built,
 * packed with `pnpm pack` (workspace:^ becomes a version) and installed with npm into a project
 * outside the workspace, with the newest express, fastify, ioredis and node-redis the peer ranges
 * allow. There an ES module app and a CommonJS app run against Redis (and an ES module app on
 * node-redis), and every ```ts block of README.md, docs/*.md (the documentation site's pages)
 * and packages/ * /README.md compiles in a strict TypeScript build (moduleResolution node16 and
 * bundler), as does a program mixing ES modules and .cts files. The only network is the npm
 * registry.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildIfStale, pnpm, run } from '../setup/built-packages.js';
import { typescriptBlocks } from './markdown.js';

const root = join(import.meta.dirname, '..', '..');
const apps = join(import.meta.dirname, 'apps');

interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  files?: string[];
  peerDependencies?: Record<string, string>;
}
const manifest = (dir: string): Manifest => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));

/** Every package a user can install: the non-private directories of packages/. */
const packages = readdirSync(join(root, 'packages'))
  .map((name) => join(root, 'packages', name))
  .filter((dir) => existsSync(join(dir, 'package.json')) && manifest(dir).private !== true);

/** A snippet's file name, from where it is: packages/redis/README.md:34 → packages-redis-README-34.ts */
const fileFor = (where: string) => `${where.replace(/\.md:/, '-').replace(/[^\w-]+/g, '-')}.ts`;

const STRICT = {
  target: 'ES2022',
  // Hono's declarations name the web's WebSocket event types (MessageEvent<T>, CloseEvent).
  lib: ['ES2022', 'DOM'],
  types: ['node'],
  strict: true,
  noUncheckedIndexedAccess: true,
  exactOptionalPropertyTypes: true,
  noEmit: true,
  skipLibCheck: false,
  moduleDetection: 'force',
  esModuleInterop: true,
  // NestJS's decorators are the legacy ones: Nest projects compile with this on.
  experimentalDecorators: true,
  // This one project holds Express and Koa together, which no app does: Express 5.3 hoists
  // content-disposition 2 (its own types, no `Options`) over the @types/content-disposition that
  // @types/koa is written against (TS2694 inside @types/koa). Point the name at those types.
  paths: { 'content-disposition': ['./node_modules/@types/content-disposition'] },
};

/**
 * What users install beside a framework to use it from TypeScript as the READMEs do (the types of
 * Koa, its router, Hono's Node server, Nest's Express and Fastify platforms and its runtime
 * companions).
 */
const COMPANIONS: Record<string, Record<string, string>> = {
  koa: { '@types/koa': 'latest', '@koa/router': 'latest' },
  hono: { '@hono/node-server': 'latest' },
  '@nestjs/core': {
    '@nestjs/platform-express': 'latest',
    '@nestjs/platform-fastify': 'latest',
    'reflect-metadata': 'latest',
    rxjs: 'latest',
  },
};

/**
 * Nest 12 is ES modules only, and CommonJS declarations of its ecosystem (@nestjs/throttler's)
 * import it: under `module: node16` TypeScript refuses that (TS1479), while `nodenext` follows
 * Node's require(esm) (Node ≥ 20.19). Nest 12 projects compile with nodenext or a bundler, so its
 * README's blocks, every other block that imports Nest, and the programs importing every package
 * do too.
 */
const NEST_SNIPPETS = 'snippets/nest--*';

/** Whether a block uses Nest (the root README's first Nest limit, the Nest README's blocks). */
const usesNest = (code: string) => /from '@(nestjs\/[\w-]+|sluice\/nestjs)'/.test(code);

let project: string;

/** `tsc -p <config>` in the consumer project; its diagnostics, or '' when it compiles. */
async function tsc(config: string): Promise<string> {
  try {
    await run(process.execPath, [join(project, 'node_modules/typescript/bin/tsc'), '-p', config], {
      cwd: project,
    });
    return '';
  } catch (error) {
    return String((error as { stdout?: string }).stdout ?? error);
  }
}

beforeAll(async () => {
  project = await mkdtemp(join(tmpdir(), 'sluice-consumer-'));
  const tarballs = join(project, 'tarballs');
  mkdirSync(tarballs);
  for (const dir of packages) await buildIfStale(dir);
  await Promise.all(packages.map((dir) => pnpm(['pack', '--pack-destination', tarballs], dir)));

  // The newest framework and client versions each package's peer range allows.
  const peers = new Map<string, string>();
  for (const dir of packages) {
    for (const [name, range] of Object.entries(manifest(dir).peerDependencies ?? {})) {
      // A sluice package as a peer (@sluice/fastify's optional @sluice/redis) is a tarball here.
      if (!range.startsWith('workspace:')) peers.set(name, range);
    }
  }
  const dependencies: Record<string, string> = {};
  for (const dir of packages) {
    const { name, version } = manifest(dir);
    // pnpm names a tarball @scope/name@1.2.3 as scope-name-1.2.3.tgz.
    dependencies[name] = `file:./tarballs/${name.replace(/^@/, '').replace('/', '-')}-${version}.tgz`;
  }
  for (const [name, range] of peers) {
    dependencies[name] = range;
    Object.assign(dependencies, COMPANIONS[name]);
  }
  Object.assign(dependencies, { '@types/express': 'latest', '@types/node': '^20', typescript: 'latest' });
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'sluice-consumer', private: true, type: 'module', dependencies }, null, 2),
  );
  await run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: project });

  for (const file of readdirSync(apps)) copyFileSync(join(apps, file), join(project, file));

  // Every TypeScript block of the READMEs, one module each: its prelude, then the block as written.
  mkdirSync(join(project, 'snippets'));
  const readmes = [
    'README.md',
    ...readdirSync(join(root, 'docs'))
      .filter((file) => file.endsWith('.md'))
      .map((file) => `docs/${file}`),
    ...packages.map((dir) => join(relative(root, dir), 'README.md')),
  ];
  for (const readme of readmes) {
    for (const block of typescriptBlocks(join(root, readme), readme)) {
      const file = `${usesNest(`${block.prelude}\n${block.code}`) ? 'nest--' : ''}${fileFor(block.where)}`;
      writeFileSync(join(project, 'snippets', file), `${block.prelude}\n${block.code}\n`);
    }
  }
  // ES modules and CommonJS files in one program use both declaration files of each package.
  mkdirSync(join(project, 'mixed'));
  // Each package's root, and the entry point an app imports beside it (ServerStore without LMDB).
  const entries = [...packages.map((dir) => manifest(dir).name), '@sluice/server/client'];
  const imports = entries.map((entry, i) => `import * as p${i} from '${entry}';`).join('\n');
  const uses = `export const used = [${entries.map((_, i) => `p${i}`).join(', ')}];\n`;
  // The adapters' augmentations (route config, request.rateLimit, req.rateLimit) in each format.
  const augmented = `import { fastify } from 'fastify';
import express from 'express';
const app = fastify();
app.get('/', { config: { rateLimit: false } }, async (request) => request.rateLimit?.remaining);
express().get('/', (req, res) => {
  res.json(req.rateLimit?.remaining);
});
`;
  writeFileSync(join(project, 'mixed', 'esm.ts'), `${imports}\n${augmented}${uses}`);
  writeFileSync(join(project, 'mixed', 'cjs.cts'), `${imports}\n${augmented}${uses}`);

  const config = (name: string, options: object, include: string[], exclude: string[] = []) =>
    writeFileSync(
      join(project, name),
      JSON.stringify({ compilerOptions: { ...STRICT, ...options }, include, exclude }, null, 2),
    );
  const node16 = { module: 'node16', moduleResolution: 'node16' };
  const nodenext = { module: 'nodenext', moduleResolution: 'nodenext' };
  config('tsconfig.node16.json', node16, ['snippets'], [NEST_SNIPPETS]);
  config('tsconfig.nodenext.json', nodenext, [NEST_SNIPPETS]);
  config('tsconfig.bundler.json', { module: 'esnext', moduleResolution: 'bundler' }, ['snippets']);
  config('tsconfig.mixed.json', nodenext, ['mixed']);
  config('tsconfig.cjs.json', nodenext, ['mixed/cjs.cts']);
}, 600_000);

afterAll(async () => {
  if (project !== undefined && process.env.SLUICE_KEEP_CONSUMER === undefined)
    await rm(project, { recursive: true, force: true });
});

describe('the packed packages, installed with npm outside the workspace', () => {
  it('every package ships its README and the LICENSE', async () => {
    for (const dir of packages) {
      const { name } = manifest(dir);
      const installed = join(project, 'node_modules', name);
      const license = join(installed, 'LICENSE');
      expect([name, existsSync(join(installed, 'README.md')), existsSync(license)]).toEqual([
        name,
        true,
        true,
      ]);
      // Each package's copy is the root LICENSE.
      expect(readFileSync(license, 'utf8')).toBe(readFileSync(join(root, 'LICENSE'), 'utf8'));
    }
  });

  it.each(['node16', 'nodenext', 'bundler'])(
    'every README code block compiles (strict, moduleResolution %s)',
    async (mode) => {
      const snippets = readdirSync(join(project, 'snippets'));
      expect(snippets.length).toBeGreaterThan(10);
      // The documentation site's pages are compiled too, and so are the README's first limits.
      expect(snippets.filter((file) => file.startsWith('docs-options-')).length).toBeGreaterThanOrEqual(5);
      expect(snippets.some((file) => file.startsWith('nest--README-'))).toBe(true);
      // Every block is in at least one of node16 and nodenext (NEST_SNIPPETS), and in bundler.
      expect(await tsc(`tsconfig.${mode}.json`)).toBe('');
    },
    120_000,
  );

  it('a program mixing ES modules and .cts files compiles against both declaration files', async () => {
    expect(await tsc('tsconfig.mixed.json')).toBe('');
  }, 120_000);

  it('a CommonJS-only program sees the augmentations too', async () => {
    expect(await tsc('tsconfig.cjs.json')).toBe('');
  }, 120_000);

  const expected = {
    core: [true, true, false],
    subpath: [true, 'ERR_SLUICE_INVALID_OPTION', 'utilizationShed'],
    express: [
      [200, '"app";r=4;t=60, "route";r=1;t=60'],
      [200, '"app";r=3;t=60, "route";r=0;t=60'],
      // Refused by the route's limit: the app-wide limit's unit is given back (all-or-nothing).
      [429, '"app";r=3;t=60, "route";r=0;t=60'],
    ],
    fastify: [
      [200, '"app";r=1;t=60'],
      [200, '"app";r=0;t=60'],
      [429, '"app";r=0;t=60'],
    ],
  };
  it.each(['app.mjs', 'app.cjs', 'app-node-redis.mjs'])(
    '%s runs the core, Express and Fastify on Redis',
    async (app) => {
      const { stdout } = await run(process.execPath, [app], {
        cwd: project,
        env: { ...process.env, REDIS_PORT: String(inject('redisPort')) },
      });
      expect(JSON.parse(stdout)).toEqual(expected);
    },
    60_000,
  );
});

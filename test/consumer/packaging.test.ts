/**
 * Each public package as the registry shows it (issue 25 §3): a LICENSE file of its own (an
 * `npm pack` in its directory ships only what is there), `repository` with the package's
 * directory, `homepage` and `bugs` (the registry rewrites a README's relative links against the
 * repository), and every relative link of its README pointing at a file that exists.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { pnpm } from '../setup/built-packages.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  files?: string[];
  repository?: { type?: string; url?: string; directory?: string };
  homepage?: string;
  bugs?: { url?: string };
}

const packages = readdirSync(join(root, 'packages'))
  .map((name) => ({ name, dir: join(root, 'packages', name) }))
  .filter(({ dir }) => existsSync(join(dir, 'package.json')))
  .map(({ name, dir }) => ({
    name,
    dir,
    manifest: JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest,
  }))
  .filter(({ manifest }) => manifest.private !== true);

describe('every public package, as the registry shows it', () => {
  it('there are packages to check', () => {
    expect(packages.length).toBeGreaterThanOrEqual(9);
  });

  for (const { name, dir, manifest } of packages) {
    it(`${manifest.name}: its own LICENSE (the root's), listed in files`, () => {
      expect(existsSync(join(dir, 'LICENSE'))).toBe(true);
      expect(readFileSync(join(dir, 'LICENSE'), 'utf8')).toBe(readFileSync(join(root, 'LICENSE'), 'utf8'));
      expect(manifest.files).toContain('LICENSE');
    });

    it(`${manifest.name}: repository (with its directory), homepage and bugs`, () => {
      expect(manifest.repository).toMatchObject({ type: 'git', directory: `packages/${name}` });
      expect(manifest.repository?.url).toMatch(/^git\+https:\/\/github\.com\/.+\.git$/);
      expect(manifest.homepage).toMatch(
        new RegExp(`^https://github\\.com/.+/tree/main/packages/${name}#readme$`),
      );
      expect(manifest.bugs?.url).toMatch(/^https:\/\/github\.com\/.+\/issues$/);
    });

    it(`${manifest.name}: every relative link of its README points at a file of the repository`, () => {
      const readme = readFileSync(join(dir, 'README.md'), 'utf8');
      const links = [...readme.matchAll(/\]\(([^)\s]+)\)/g)]
        .map((match) => match[1]!)
        .filter((link) => !/^[a-z]+:/i.test(link) && !link.startsWith('#'));
      const broken = links.filter((link) => !existsSync(resolve(dir, link.split('#')[0]!)));
      expect(broken).toEqual([]);
    });
  }
});

describe('pnpm -r pack (issue 25 §3)', () => {
  it('packs every public package and skips the private ones (playground, examples, bench) instead of aborting', async () => {
    const out = await mkdtemp(join(tmpdir(), 'sluice-pack-'));
    try {
      await pnpm(['-r', 'pack', '--pack-destination', out], root);
      // pnpm names a tarball @scope/name@1.2.3 as scope-name-1.2.3.tgz.
      const expected = packages.map(
        ({ manifest }) => `${manifest.name.replace(/^@/, '').replace('/', '-')}-${manifest.version}.tgz`,
      );
      expect(readdirSync(out).sort()).toEqual(expected.sort());
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  }, 60_000);
});

/** The adapters: packages whose entry point re-exports core (ARCHITECTURE.md's "Add an adapter"). */
const adapters = readdirSync(join(root, 'packages')).filter((name) => {
  const index = join(root, 'packages', name, 'src', 'index.ts');
  return existsSync(index) && readFileSync(index, 'utf8').includes("export * from '@sluice/core';");
});

describe('the docs name every adapter (issue 28)', () => {
  const docs = [
    'README.md',
    'ARCHITECTURE.md',
    ...readdirSync(join(root, 'docs'))
      .filter((file) => file.endsWith('.md'))
      .map((file) => `docs/${file}`),
    ...readdirSync(join(root, 'packages'))
      .filter((name) => existsSync(join(root, 'packages', name, 'README.md')))
      .map((name) => `packages/${name}/README.md`),
  ];

  it('there are five adapters', () => {
    expect(adapters.sort()).toEqual(['express', 'fastify', 'hono', 'koa', 'nestjs']);
  });

  it('no doc speaks of "both adapters" or "the two adapters"', () => {
    const stale = docs.filter((doc) =>
      /\b(both|the two|two) adapters\b/i.test(readFileSync(join(root, doc), 'utf8')),
    );
    expect(stale).toEqual([]);
  });

  it('no comment in the packages\' sources speaks of "both adapters" either', () => {
    const sources = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
        entry.isDirectory()
          ? sources(join(dir, entry.name))
          : entry.name.endsWith('.ts')
            ? [join(dir, entry.name)]
            : [],
      );
    const stale = readdirSync(join(root, 'packages'))
      .filter((name) => existsSync(join(root, 'packages', name, 'src')))
      .flatMap((name) => sources(join(root, 'packages', name, 'src')))
      .filter((file) => /\b(both|the two|two) adapters\b/i.test(readFileSync(file, 'utf8')));
    expect(stale).toEqual([]);
  });

  it("the README's list of adapters and ARCHITECTURE.md's map name every one", () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const bullet = /\*\*Thin adapters\*\*[^\n]*(\n {2}[^\n]*)*/.exec(readme)?.[0] ?? '';
    const map = readFileSync(join(root, 'ARCHITECTURE.md'), 'utf8');
    for (const adapter of adapters) {
      expect(bullet.toLowerCase(), adapter).toContain(adapter);
      expect(map, adapter).toContain(`${adapter}/`);
    }
  });
});

/**
 * The suite's two tiers (issue 35): `pnpm test`, what a contributor runs, and `pnpm test:release`,
 * what checks the artefacts a user installs and the second-major repeats (vitest.config.ts says
 * which file goes where and why). A file in neither would never run in CI; a file in both would run
 * twice. vitest itself is asked which files each command runs: the `--project` filters are read
 * from package.json's scripts, and vitest resolves the projects and globs their files as a run
 * would, without running them.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { PassThrough } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { createVitest } from 'vitest/node';
import { SLOW_FIRST } from '../setup/sequencer.js';

const ROOT = join(import.meta.dirname, '..', '..');
const SCRIPTS = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
).scripts;

/** The `--project` filters of a package.json script, as the shell passes them to vitest. */
function projectFilters(script: string): string[] {
  const command = SCRIPTS[script] ?? '';
  expect(command, `package.json's "${script}" script runs vitest`).toMatch(/\bvitest run\b/);
  return [...command.matchAll(/--project[= ]'?([^'\s]+)'?/g)].map((match) => match[1]!);
}

/** A file vitest would run in one project: the file, and the Redis client family it runs on. */
interface Run {
  file: string;
  project: string;
  client: string;
}

/** What vitest runs under these `--project` filters, each file with its project and client. */
async function runsOf(filters: string[]): Promise<Run[]> {
  const vitest = await createVitest(
    'test',
    { watch: false, config: join(ROOT, 'vitest.config.ts'), root: ROOT, project: filters },
    {},
    // Its notices (the type tests' "experimental" one) are not this test's output; errors throw.
    { stdout: new PassThrough(), stderr: new PassThrough() },
  );
  try {
    const runs: Run[] = [];
    for (const project of vitest.projects) {
      const { testFiles, typecheckTestFiles } = await project.globTestFiles();
      const client = project.config.env?.SLUICE_REDIS_CLIENT ?? '-';
      for (const file of [...testFiles, ...typecheckTestFiles]) {
        runs.push({ file: relative(ROOT, file), project: project.name, client });
      }
    }
    return runs;
  } finally {
    await vitest.close();
  }
}

/** Every test file under test/, as found on disk (not by vitest's globs); test/.tmp is scratch. */
function testFilesOnDisk(dir = 'test'): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true })
    .flatMap((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory())
        return entry.name === '.tmp' || entry.name === 'node_modules' ? [] : testFilesOnDisk(path);
      return /\.test(-d)?\.ts$/.test(entry.name) ? [path] : [];
    })
    .sort();
}

/**
 * Whether a file, or a module it imports by a relative path (transitively), builds a package's
 * dist (the release tier's tarballs and runtimes) or drives Chromium (the site and its pages).
 */
function needsBuildOrBrowser(file: string, seen = new Set<string>()): boolean {
  if (seen.has(file)) return false;
  seen.add(file);
  const source = readFileSync(join(ROOT, file), 'utf8');
  if (/\b(buildIfStale|ensureBuilt)\(/.test(source)) return true;
  if (/^import (?!type )[^;]*from 'playwright-core'/m.test(source)) return true;
  return [...source.matchAll(/from '(\.\.?\/[^']+)\.js'/g)]
    .map((match) => join(dirname(file), `${match[1]}.ts`))
    .filter((path) => existsSync(join(ROOT, path)) && !path.startsWith(join('test', 'setup')))
    .some((path) => needsBuildOrBrowser(path, seen));
}

describe('the two test tiers', () => {
  let first: Run[];
  let release: Run[];
  beforeAll(async () => {
    first = await runsOf(projectFilters('test'));
    release = await runsOf(projectFilters('test:release'));
  }, 60_000);
  const files = (runs: Run[]) => [...new Set(runs.map((run) => run.file))].sort();
  const onIoredis5 = (runs: Run[]) =>
    files(runs.filter((run) => run.client === 'ioredis' || run.client === '-'));

  it('every test file runs on ioredis 5 (or as a type test) in exactly one tier', () => {
    const inFirst = onIoredis5(first);
    const inRelease = onIoredis5(release);
    expect(inFirst.length).toBeGreaterThan(100);
    expect(inRelease.length).toBeGreaterThan(0);
    const both = inFirst.filter((file) => inRelease.includes(file));
    const neither = testFilesOnDisk().filter((file) => !inFirst.includes(file) && !inRelease.includes(file));
    expect({ neither, both }).toEqual({ neither: [], both: [] });
  });

  it('no file runs twice on one client, and a release repeat is of a file the first tier runs', () => {
    const pairs = [...first, ...release].map((run) => `${run.client} ${run.file}`);
    expect(pairs.filter((pair, i) => pairs.indexOf(pair) !== i)).toEqual([]);
    const firstFiles = files(first);
    const repeats = release.filter((run) => run.client !== 'ioredis');
    expect(repeats.filter((run) => !firstFiles.includes(run.file))).toEqual([]);
  });

  it('the first tier runs on every client family, from the sources: no package built, no browser', () => {
    expect([...new Set(first.map((run) => run.client))].sort()).toEqual(
      ['-', 'ioredis', 'ioredis6', 'iovalkey', 'node-redis'].sort(),
    );
    expect(files(first).filter((file) => needsBuildOrBrowser(file))).toEqual([]);
    // The check itself finds them: the tarballs, the runtimes, the site and the playground's pages.
    for (const file of [
      'test/consumer/consumer.test.ts',
      'test/hono/runtimes/bun.test.ts',
      'test/docs/site.test.ts',
      'test/playground/adaptive-page.test.ts',
    ]) {
      expect(needsBuildOrBrowser(file), file).toBe(true);
    }
  });

  it('the files the sequencer starts first (test/setup/sequencer.ts) are test files that run', () => {
    const runs = files([...first, ...release]);
    expect(SLOW_FIRST.filter((file) => !runs.includes(file))).toEqual([]);
  });
});

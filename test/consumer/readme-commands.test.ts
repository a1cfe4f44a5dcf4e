import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');

/**
 * The commands of the README's section for contributors: the first ```sh block after its
 * "Working on sluice" heading, comments dropped. (The README's first block is the user's
 * `npm install`.)
 */
function quickStart(): string[] {
  const readme = read('README.md');
  const section = readme.slice(Math.max(0, readme.indexOf('\n## Working on sluice\n')));
  expect(section.startsWith('\n## Working on sluice\n')).toBe(true);
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return block
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line !== '');
}

describe("the README's two commands", () => {
  it('the first screen installs an adapter from npm, before any command for contributors', () => {
    const readme = read('README.md');
    const install = readme.indexOf('npm install @sluice/express');
    expect(install).toBeGreaterThan(-1);
    expect(readme.slice(0, install).split('\n').length).toBeLessThan(15);
    expect(install).toBeLessThan(readme.indexOf('\n## Working on sluice\n'));
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
  });

  const pnpmVersion = (JSON.parse(read('package.json')) as { packageManager: string }).packageManager.replace(
    /^pnpm@/,
    '',
  );

  it('need only Node and npm: pnpm through npx, at the packageManager version', () => {
    const commands = quickStart();
    expect(commands).toEqual([
      `npx --yes pnpm@${pnpmVersion} install && npx --yes pnpm@${pnpmVersion} demo`,
      `npx --yes pnpm@${pnpmVersion} test`,
    ]);
    expect(commands.join('\n')).not.toMatch(/corepack/);
  });

  it('the test commands install redis-server when missing, with the script CI runs, and CI runs both tiers', () => {
    const { scripts } = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    expect(scripts.test).toBe("sh scripts/ensure-test-tools.sh && vitest run --project '!release*'");
    expect(scripts['test:release']).toBe(
      "sh scripts/ensure-test-tools.sh && vitest run --project 'release*'",
    );
    const ci = read('.ci/run');
    expect(ci).toMatch(/^sh scripts\/ensure-test-tools\.sh$/m);
    expect(ci).toMatch(/^pnpm test 2>&1[^\n]*\n(.*\n)*pnpm test:release 2>&1/m);
  });
});

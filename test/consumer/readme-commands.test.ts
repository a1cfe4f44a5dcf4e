import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');

/** The commands of the README's quick start: its first ```sh block, comments dropped. */
function quickStart(): string[] {
  const block = /```sh\n([\s\S]*?)```/.exec(read('README.md'))?.[1] ?? '';
  return block
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line !== '');
}

describe("the README's two commands", () => {
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

  it('the test command installs redis-server when missing, with the script CI runs', () => {
    const { scripts } = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    expect(scripts.test).toBe('sh scripts/ensure-test-tools.sh && vitest run');
    const ci = read('.ci/run');
    expect(ci).toMatch(/^sh scripts\/ensure-test-tools\.sh$/m);
    expect(ci).toMatch(/^pnpm test 2>&1/m);
  });
});

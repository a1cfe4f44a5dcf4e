/**
 * ARCHITECTURE.md's checklists ("Add an algorithm", "Add an adapter", "Add a store") name the
 * files a contributor must touch. A checklist that names a file that moved sends them to the
 * wrong room; one that misses a file is found by a review, not here. This test holds the first:
 * every path a checklist names exists, with `<kind>` and `<framework>` read as one real kind and
 * one real framework.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const ARCHITECTURE = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8');
const PACKAGES = readdirSync(join(ROOT, 'packages'));

/** Each `## Add …` section's text, by its heading. */
function checklists(): Map<string, string> {
  const sections = new Map<string, string>();
  for (const part of ARCHITECTURE.split(/^## /m).slice(1)) {
    const heading = part.slice(0, part.indexOf('\n'));
    if (heading.startsWith('Add ')) sections.set(heading, part);
  }
  return sections;
}

/** The backticked paths of a text: a name with a slash or a file extension, no spaces or calls. */
function namedPaths(text: string): string[] {
  return [...text.matchAll(/`([^`\s()]+)`/g)]
    .map((match) => match[1]!)
    .filter((token) => /\w\.(ts|mjs|cjs|json|md|lua)$/.test(token) || /^[\w.<>-]+\/[\w.<>/-]*$/.test(token))
    .filter((token) => !token.startsWith('@') && !token.includes('://'));
}

/** Where a named path is, trying the repository root, then each package and its src. */
function located(token: string): string | undefined {
  const path = token.replaceAll('<kind>', 'token-bucket').replaceAll('<framework>', 'express');
  const candidates = [
    path,
    ...PACKAGES.flatMap((pkg) => [join('packages', pkg, path), join('packages', pkg, 'src', path)]),
    join('packages', 'redis', 'src', 'lua', path),
  ];
  return candidates.find((candidate) => existsSync(join(ROOT, candidate)));
}

describe("ARCHITECTURE.md's checklists", () => {
  const sections = checklists();

  it('are there: add an algorithm, an adapter, a store', () => {
    expect([...sections.keys()]).toEqual(['Add an algorithm', 'Add an adapter', 'Add a store']);
  });

  it.each([...sections])('%s: every path it names exists', (_heading, text) => {
    const paths = namedPaths(text);
    expect(paths.length).toBeGreaterThan(2);
    expect(paths.filter((token) => located(token) === undefined)).toEqual([]);
  });

  it('reads paths as paths (the check can fail)', () => {
    expect(
      namedPaths('edit `packages/core/src/nowhere.ts` and `lua/algorithms.ts`, call `rateLimit()`'),
    ).toEqual(['packages/core/src/nowhere.ts', 'lua/algorithms.ts']);
    expect(located('packages/core/src/nowhere.ts')).toBeUndefined();
    expect(located('lua/algorithms.ts')).toBe(join('packages', 'redis', 'src', 'lua', 'algorithms.ts'));
  });
});

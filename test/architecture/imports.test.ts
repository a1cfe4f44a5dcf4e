/**
 * ARCHITECTURE.md's dependency rule, held by the sources themselves: no package's modules import
 * each other in a loop (type imports included: a loop of types is still a loop a reader must
 * untangle), and a package imports only the sluice packages the rule lets it.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const PACKAGES = readdirSync(join(ROOT, 'packages')).filter((name) =>
  statSync(join(ROOT, 'packages', name, 'src'), { throwIfNoEntry: false })?.isDirectory(),
);

/** Which sluice packages each package may import (ARCHITECTURE.md, "The dependency rule"). */
const ALLOWED: Record<string, readonly string[]> = {
  core: [],
  redis: ['core'],
  host: ['core'],
  server: ['core', 'host'],
  otel: ['core'],
  express: ['core'],
  fastify: ['core'],
  hono: ['core'],
  koa: ['core'],
  nestjs: ['core'],
  playground: ['core'],
};

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

const IMPORT = /^\s*(?:import|export)\b[^'"]*?\bfrom\s+'([^']+)'/gm;

function imports(file: string): string[] {
  return [...readFileSync(file, 'utf8').matchAll(IMPORT)].map((match) => match[1]!);
}

/** The import loops among the modules under `src`, each as the chain of files that closes it. */
function loops(src: string): string[] {
  const files = sources(src);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    graph.set(
      file,
      imports(file)
        .filter((spec) => spec.startsWith('.'))
        .map((spec) => resolve(dirname(file), spec.replace(/\.js$/, '.ts')))
        .filter((target) => target !== file),
    );
  }
  const found = new Set<string>();
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (file: string) => {
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      const at = path.indexOf(next);
      if (at !== -1) found.add([...path.slice(at), next].map((f) => relative(src, f)).join(' → '));
      else if (!done.has(next)) visit(next);
    }
    path.pop();
    done.add(file);
  };
  for (const file of files) if (!done.has(file)) visit(file);
  return [...found];
}

describe('the dependency rule', () => {
  it('names every package with sources', () => {
    expect(Object.keys(ALLOWED).sort()).toEqual([...PACKAGES].sort());
  });

  it.each(PACKAGES)('%s: no import loop among its modules', (pkg) => {
    expect(loops(join(ROOT, 'packages', pkg, 'src'))).toEqual([]);
  });

  it.each(PACKAGES)('%s: imports only the sluice packages the rule allows', (pkg) => {
    const used = new Set(
      sources(join(ROOT, 'packages', pkg, 'src')).flatMap((file) =>
        imports(file).flatMap((spec) => /^@sluice\/([a-z]+)/.exec(spec)?.[1] ?? []),
      ),
    );
    used.delete(pkg);
    expect([...used].filter((name) => !ALLOWED[pkg]!.includes(name))).toEqual([]);
  });

  it('finds a loop where there is one (the check can fail)', () => {
    // The shape of the loops this file was written for (decision.ts read EPSILON from
    // algorithm.ts, which reads the type Decision from decision.ts), through a subfolder too.
    const dir = mkdtempSync(join(tmpdir(), 'sluice-loops-'));
    try {
      mkdirSync(join(dir, 'sub'));
      writeFileSync(join(dir, 'algorithm.ts'), "import type { Decision } from './decision.js';\n");
      writeFileSync(join(dir, 'decision.ts'), "import { EPSILON } from './algorithm.js';\n");
      writeFileSync(join(dir, 'store.ts'), "import type { LeaseStore } from './sub/lease-store.js';\n");
      writeFileSync(
        join(dir, 'sub', 'lease-store.ts'),
        "export type {\n  MaybePromise,\n} from '../store.js';\n",
      );
      expect(loops(dir).sort()).toEqual([
        'algorithm.ts → decision.ts → algorithm.ts',
        'store.ts → sub/lease-store.ts → store.ts',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const nestSources = join(root, 'packages', 'nestjs', 'src');

/** The module specifiers a declaration file imports (`from '…'`, `import('…')`, `/// <reference types>`). */
function importsOf(text: string): string[] {
  const found = new Set<string>();
  for (const pattern of [/from\s+'([^']+)'/g, /import\(\s*'([^']+)'\s*\)/g, /reference types="([^"]+)"/g]) {
    for (const match of text.matchAll(pattern)) found.add(match[1]!);
  }
  return [...found];
}

/**
 * `@sluice/nestjs`'s declaration files as TypeScript emits them from its sources (the workspace's
 * compiler options, the package's own imports as written), by file name under src/.
 */
function nestDeclarations(): Map<string, string> {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(root, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    },
  )!;
  const options: ts.CompilerOptions = {
    ...config.options,
    noEmit: false,
    declaration: true,
    emitDeclarationOnly: true,
    sourceMap: false,
    declarationMap: false,
  };
  const program = ts.createProgram([join(nestSources, 'index.ts')], options);
  const emitted = new Map<string, string>();
  program.emit(undefined, (fileName, text) => {
    const source = fileName.replace(/\.d\.ts$/, '.ts');
    if (source.startsWith(nestSources)) emitted.set(relative(nestSources, source), text);
  });
  return emitted;
}

// Issue 22 §2: @sluice/nestjs's declarations imported @nestjs/throttler (an optional peer: a strict
// compile without it failed with TS2307) and Express's types through @sluice/express (a Nest app on
// Fastify has neither).
describe('@sluice/nestjs declarations', () => {
  const declarations = nestDeclarations();

  it('are emitted for every source file', () => {
    expect([...declarations.keys()].sort()).toContain('index.ts');
    expect(declarations.size).toBeGreaterThan(5);
  });

  it('regression: import neither an optional peer (@nestjs/throttler) nor a platform (express, fastify, @sluice/express)', () => {
    const imported = new Map<string, string[]>();
    for (const [file, text] of declarations) imported.set(file, importsOf(text));
    const forbidden =
      /^(@nestjs\/throttler|@nestjs\/platform-|express|fastify|@sluice\/(express|fastify))(\/|$)/;
    const offending = [...imported].flatMap(([file, specifiers]) =>
      specifiers.filter((specifier) => forbidden.test(specifier)).map((specifier) => `${file}: ${specifier}`),
    );
    expect(offending).toEqual([]);
    // What they may import: Nest's own packages, sluice's core, Node's types, each other.
    const all = new Set([...imported.values()].flat());
    for (const specifier of all) {
      expect(specifier).toMatch(/^(\.\/|@nestjs\/(common|core)$|@sluice\/core(\/adapter)?$|node:)/);
    }
  });

  it('the package needs no @sluice/express and no express peer', () => {
    const manifest = JSON.parse(readFileSync(join(root, 'packages', 'nestjs', 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      peerDependencies?: Record<string, string>;
      peerDependenciesMeta?: Record<string, { optional?: boolean }>;
    };
    expect(Object.keys(manifest.dependencies ?? {})).toEqual(['@sluice/core']);
    const required = Object.keys(manifest.peerDependencies ?? {}).filter(
      (name) => manifest.peerDependenciesMeta?.[name]?.optional !== true,
    );
    expect(required.sort()).toEqual(['@nestjs/common', '@nestjs/core']);
  });
});

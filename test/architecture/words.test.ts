/**
 * ARCHITECTURE.md promises that each of its words names one thing in every package. This keeps
 * the promise for the words that drifted (issue 26): every identifier in packages/*\/src made of
 * one of them is listed below, under the one thing the word means. A new name with one of these
 * words fails here until it is added, which asks the reviewer: is this that thing? If not, the
 * name is wrong, not the list. (Identifiers only: in comments the words are plain English.)
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/** The words checked, with the forms an identifier may use them in. */
const FORMS = {
  guard: ['guard', 'guards', 'guarded'],
  gate: ['gate', 'gates'],
  settle: ['settle', 'settles', 'settled', 'settling', 'settlement'],
  wire: ['wire', 'wires'],
  hold: ['hold', 'holds', 'held', 'holding'],
} as const;
type Word = keyof typeof FORMS;

/** Each word's meaning (as ARCHITECTURE.md defines it), and every name that uses it, by package. */
const REVIEWED: { readonly [W in Word]: Readonly<Record<string, readonly string[]>> } = {
  // A sluice guard (`HttpGuard`: the concurrency limit or a load shedder in front of a request),
  // or a Nest guard (`CanActivate`), Nest's own word.
  guard: {
    core: [
      'GUARD_ENGINES',
      'GUARD_OPTIONS',
      'GuardName',
      'GuardParts',
      'HttpGuard',
      'HttpGuardOptions',
      'HttpGuardOptionsByName',
      'UnlistedGuardOptions',
      'adaptiveGuard',
      'buildGuard',
      'concurrencyGuard',
      'fleetGuard',
      'guard',
      'guardFunctionName',
      'guardLifecycle',
      'guardMiddlewares',
      'utilizationGuard',
    ],
    express: [
      'AdaptiveConcurrencyGuardOptions',
      'ExpressGuardOptions',
      'guard',
      'guardLifecycle',
      'guardMiddlewares',
      'guards',
    ],
    fastify: [
      'AdaptiveConcurrencyGuardOptions',
      'GUARD_ENGINES',
      'GUARD_NAMES',
      'GuardName',
      'GuardOptionsByName',
      'HttpGuard',
      'buildGuard',
      'compileGuard',
      'guard',
      'guardFunctionName',
      'guardHook',
      'guardLifecycle',
      'guardOptions',
      'guardsEverywhere',
      'mergeGuardOptions',
    ],
    hono: [
      'AdaptiveConcurrencyGuardOptions',
      'HonoGuardOptions',
      'HttpGuard',
      'guard',
      'guardLifecycle',
      'guardMiddlewares',
      'guards',
    ],
    koa: [
      'AdaptiveConcurrencyGuardOptions',
      'KoaGuardOptions',
      'guard',
      'guardLifecycle',
      'guardMiddlewares',
      'guards',
    ],
    nestjs: [
      'AdaptiveConcurrencyGuard',
      'AdaptiveConcurrencyGuardOptions',
      'ConcurrencyLimitGuard',
      'FleetShedGuard',
      'GuardName',
      'HttpGuardOptionsByName',
      'LeaseGuard',
      'RateLimitGuard',
      'RateLimitGuardOptions',
      'UtilizationShedGuard',
      'buildGuard',
      'guard',
      'guardLifecycle',
    ],
  },
  // The call gate: what every call of a store to its remote backend passes (`CallGate`,
  // `@sluice/core/gate`).
  gate: {
    core: ['CallGate', 'GateClient', 'GateOptions', 'GateScope', 'GateScopes', 'gate'],
    redis: ['CallGate', 'gate'],
    server: ['gate'],
  },
  // Settling a request to its actual cost: `settle(req, actual)`.
  settle: {
    core: ['settle'],
    fastify: ['settle'],
    nestjs: ['settle'],
  },
  // How a call travels to its backend: `redis/src/wire.ts` is imported by path, not by name;
  // no identifier needs the word.
  wire: {},
  // Delay mode's wait before a request proceeds: the `hold` option, the hold of `DelayMode` and
  // what a decision asks of it (`Hold`).
  hold: {
    core: ['Hold', 'held', 'hold'],
  },
};

/**
 * Names that do not mean what their word says, in packages this change could not edit: each to be
 * renamed (issue 26), then taken off this list (the test fails while one is listed but gone).
 */
const PENDING: { readonly [W in Word]?: Readonly<Record<string, readonly string[]>> } = {};

const PACKAGES = fileURLToPath(new URL('../../packages/', import.meta.url));

function* sources(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (/\.tsx?$/.test(name)) yield path;
  }
}

/** An identifier's words: `holdsLeases` → hold(s), leases; `GUARD_ENGINES` → guard, engines. */
function wordsOf(name: string): string[] {
  return name
    .replace(/^#/, '')
    .split(/_|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])/)
    .map((word) => word.toLowerCase());
}

/** Every `word package name` found in the packages' sources. */
function found(): string[] {
  const uses = new Set<string>();
  for (const pkg of readdirSync(PACKAGES)) {
    const src = join(PACKAGES, pkg, 'src');
    if (!statSync(join(PACKAGES, pkg)).isDirectory() || !existsDir(src)) continue;
    for (const file of sources(src)) {
      const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false);
      const visit = (node: ts.Node): void => {
        if (ts.isIdentifier(node) || ts.isPrivateIdentifier(node)) {
          const words = wordsOf(node.text);
          for (const [word, forms] of Object.entries(FORMS)) {
            if (words.some((w) => (forms as readonly string[]).includes(w)))
              uses.add(`${word} ${pkg} ${node.text}`);
          }
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
  }
  return [...uses].sort();
}

function existsDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function listed(lists: { readonly [W in Word]?: Readonly<Record<string, readonly string[]>> }): string[] {
  const entries: string[] = [];
  for (const [word, byPackage] of Object.entries(lists)) {
    for (const [pkg, names] of Object.entries(byPackage ?? {})) {
      for (const name of names) entries.push(`${word} ${pkg} ${name}`);
    }
  }
  return entries.sort();
}

describe('the words of ARCHITECTURE.md mean one thing in every package', () => {
  it('every name made of guard, gate, settle, wire or hold is reviewed (or pending a rename)', () => {
    expect(found()).toEqual([...listed(REVIEWED), ...listed(PENDING)].sort());
  });

  it('the word splitter finds the words in each case style', () => {
    expect(wordsOf('holdsLeases')).toEqual(['holds', 'leases']);
    expect(wordsOf('GUARD_ENGINES')).toEqual(['guard', 'engines']);
    expect(wordsOf('HttpGuard')).toEqual(['http', 'guard']);
    expect(wordsOf('#settled')).toEqual(['settled']);
  });
});

/**
 * A TypeScript entry point that a test runs in its own process (an app server, a fleet node,
 * `sluice-server`'s CLI), as one ES module plain `node` runs: the entry, the workspace sources it
 * imports (`@sluice/*` through the root tsconfig's paths) and the test helpers, bundled by
 * esbuild; npm packages stay imports, of the very files Node would load for them from where they
 * are imported. It is the same code `node --import tsx` runs, without tsx's loader in the child:
 * that hooked every import of the process (node_modules included) and cost about 2 s of CPU per
 * start on the 2-core machine, against 0.8 s bundled (the bundle is made once per test process).
 * The files that start such processes spent about half as much CPU in them once bundled (183 CPU-s
 * down to 91 over the 18 files that start them most).
 *
 * `import.meta.url` (and `dirname`, `filename`) keep their meaning: each module's own source file,
 * not the bundle. A source map lies beside each bundle (test/.tmp/node-scripts/): a child's stack
 * traces name the sources under `NODE_OPTIONS=--enable-source-maps`, which the children inherit
 * (off by default: it costs each start about 0.2 s of CPU).
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const OUT = join(ROOT, 'test', '.tmp', 'node-scripts');

const built = new Map<string, Promise<string>>();

/**
 * The path of `entry` (an absolute path to a .ts file) bundled for `node`, once per test process:
 * `spawn(process.execPath, [path, ...args])`, or `fork(path, args, { execArgv: [] })` (a fork
 * otherwise inherits the test process's own Node options).
 */
export function nodeScript(entry: string): Promise<string> {
  let script = built.get(entry);
  if (script === undefined) {
    script = bundle(entry);
    built.set(entry, script);
    script.catch(() => built.delete(entry));
  }
  return script;
}

async function bundle(entry: string): Promise<string> {
  const name = relative(ROOT, entry).replace(/\.ts$/, '').replaceAll(/[/\\]/g, '-');
  const result = await build({
    entryPoints: [entry],
    outfile: join(OUT, `${name}.mjs`),
    bundle: true,
    write: false,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    tsconfig: join(ROOT, 'tsconfig.json'),
    sourcemap: 'linked',
    logLevel: 'silent',
    plugins: [packagesInPlace, ownImportMeta],
  });
  const code = result.outputFiles.find((file) => file.path.endsWith('.mjs'))!.text;
  const map = result.outputFiles.find((file) => file.path.endsWith('.map'))!.contents;
  // Named by content: the two test processes may bundle the same entry at once, and a run after a
  // change to the sources gets a new file rather than overwriting one a process may be loading.
  const file = `${name}.${createHash('sha1').update(code).digest('hex').slice(0, 12)}.mjs`;
  const path = join(OUT, file);
  await mkdir(OUT, { recursive: true });
  await Promise.all([
    replace(path, code.replace(/\/\/# sourceMappingURL=\S+\s*$/, `//# sourceMappingURL=${file}.map\n`)),
    replace(`${path}.map`, map),
  ]);
  await forgetOlder(name, file);
  return path;
}

/**
 * Removes this entry's bundles of other sources (before an edit) once they are 10 minutes old: the
 * folder would otherwise grow by a bundle per edit, and no run still going needs one that old.
 */
async function forgetOlder(name: string, kept: string): Promise<void> {
  const before = Date.now() - 10 * 60_000;
  for (const other of await readdir(OUT)) {
    if (!other.startsWith(`${name}.`) || other.startsWith(kept)) continue;
    const path = join(OUT, other);
    try {
      if ((await stat(path)).mtimeMs < before) await rm(path, { force: true });
    } catch {
      // Removed meanwhile by the other test process.
    }
  }
}

/** Writes `path` whole or not at all (another process may be reading or writing the same file). */
async function replace(path: string, contents: string | Uint8Array): Promise<void> {
  const partial = `${path}.${process.pid}.tmp`;
  await writeFile(partial, contents);
  await rename(partial, path);
}

const OWN_RESOLVE = Symbol('node-script: resolve as esbuild would');

/** npm packages stay imports, of the file esbuild (and Node) resolves from the importing module. */
const packagesInPlace: Plugin = {
  name: 'packages-in-place',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (
        args.pluginData === OWN_RESOLVE ||
        args.path.startsWith('node:') ||
        args.path.startsWith('@sluice/')
      ) {
        return undefined;
      }
      const found = await b.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: OWN_RESOLVE,
      });
      if (found.errors.length > 0) return { errors: found.errors };
      // Node's built-ins without the `node:` prefix (`import { once } from 'events'`).
      if (found.external) return { path: args.path, external: true };
      return { path: pathToFileURL(found.path).href, external: true };
    });
  },
};

/** `import.meta.url`, `.dirname` and `.filename` in a source file mean that file, not the bundle. */
const ownImportMeta: Plugin = {
  name: 'own-import-meta',
  setup(b) {
    b.onLoad({ filter: /\.[cm]?ts$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      if (!source.includes('import.meta.')) return undefined;
      return {
        contents: source
          .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href))
          .replaceAll('import.meta.dirname', JSON.stringify(dirname(args.path)))
          .replaceAll('import.meta.filename', JSON.stringify(args.path)),
        loader: 'ts',
      };
    });
  },
};

import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { build, type PreviewServer, preview } from 'vite';

// The page functions below run in the browser; the root typecheck has no DOM library, so the
// little of it they use is declared here.
declare const document: { body: { dataset: Record<string, string | undefined> } };

/** Debian's `chromium` package: no browser is downloaded at install time. */
export const CHROMIUM = '/usr/bin/chromium';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PAGE = join(ROOT, 'packages/playground');
/** Build output and screenshots: test artifacts, gitignored. */
export const ARTIFACTS = join(ROOT, 'test/.tmp/playground');

/**
 * Debian's Chromium, headless, with a fresh profile in `profile` (a persistent context is how
 * playwright takes a --user-data-dir): the flags every browser test of the suite needs, and `more`.
 */
export function launchChromium(
  profile: string,
  more: { args?: readonly string[]; viewport?: { width: number; height: number } } = {},
): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      ...(more.args ?? []),
    ],
    ...(more.viewport === undefined ? {} : { viewport: more.viewport }),
  });
}

/** The built page served by `vite preview` on a free loopback port, and a headless Chromium. */
export interface Playground {
  readonly url: string;
  readonly context: BrowserContext;
  close(): Promise<void>;
}

/** The newest modification time of the files under `path` (node_modules and dist left out). */
function newest(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = 0;
  for (const name of readdirSync(path)) {
    if (name !== 'node_modules' && name !== 'dist') latest = Math.max(latest, newest(join(path, name)));
  }
  return latest;
}

/**
 * The page built once for the sources as they are: the browser tests run in two test processes
 * at once, and each building into one `dist` (emptied first) could empty it under the other's
 * server. A build goes to a directory of its own and is renamed to one named by the sources'
 * newest time; a test that finds that directory serves it, and of two builds racing, the second
 * rename fails and its copy is dropped.
 */
async function builtPage(configFile: string): Promise<string> {
  const sources = Math.max(newest(PAGE), newest(join(ROOT, 'packages/core/src')));
  const outDir = join(ARTIFACTS, `dist-${Math.floor(sources)}`);
  if (existsSync(join(outDir, 'index.html'))) return outDir;
  const building = mkdtempSync(join(ARTIFACTS, 'building-'));
  await build({
    root: PAGE,
    configFile,
    mode: 'production',
    logLevel: 'warn',
    build: { outDir: building, emptyOutDir: true },
  });
  try {
    renameSync(building, outDir);
  } catch (error) {
    // Another process renamed its build first: the same sources, so the same page.
    rmSync(building, { recursive: true, force: true });
    if (!existsSync(join(outDir, 'index.html'))) throw error;
  }
  // Builds of older sources (gitignored artifacts) are not kept.
  for (const name of readdirSync(ARTIFACTS)) {
    if (/^dist(-\d+)?$/.test(name) && join(ARTIFACTS, name) !== outDir) {
      rmSync(join(ARTIFACTS, name), { recursive: true, force: true });
    }
  }
  return outDir;
}

/**
 * Builds the page as `pnpm --filter @sluice/playground build` does (once for the sources as they are), serves it with `vite preview`
 * and starts Chromium with a fresh profile. Fails loudly when Chromium is not installed: the
 * browser test must never be skipped (`.ci/run` installs it).
 */
export async function startPlayground(): Promise<Playground> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: the playground's browser test needs Debian's chromium (apt-get install -y chromium; .ci/run installs it)`,
    );
  }
  mkdirSync(ARTIFACTS, { recursive: true });
  const configFile = join(PAGE, 'vite.config.ts');
  const outDir = await builtPage(configFile);
  const server: PreviewServer = await preview({
    root: PAGE,
    configFile,
    logLevel: 'warn',
    build: { outDir },
    preview: { host: '127.0.0.1', port: 0, strictPort: true, open: false },
  });
  const { port } = server.httpServer.address() as AddressInfo;
  const profile = mkdtempSync(join(tmpdir(), 'sluice-chromium-'));
  let context: BrowserContext;
  try {
    context = await launchChromium(profile, {
      args: ['--disable-quic', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1400, height: 1000 },
    });
  } catch (error) {
    await server.close();
    throw error;
  }
  return {
    url: `http://127.0.0.1:${port}/`,
    context,
    async close() {
      await context.close();
      await server.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Opens the page at `query` and waits until its run is over; fails on any page error. */
export async function open(playground: Playground, query: string): Promise<Page> {
  const page = await playground.context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(`${playground.url}${query}`);
  await settled(page);
  if (errors.length > 0) throw new Error(`the page threw: ${errors.join('; ')}`);
  return page;
}

/** Waits for the page's current run to finish (`done`) or fail (`error`). */
export async function settled(page: Page): Promise<string> {
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state ?? ''), null, {
    timeout: 60_000,
  });
  return page.evaluate(() => document.body.dataset.state!);
}

export interface ShownLane {
  readonly lane: string;
  readonly admitted: number;
  readonly refused: number;
}

/** The admitted and refused counts of each lane, read from the summary table's text as a person reads it. */
export function shownCounts(page: Page): Promise<ShownLane[]> {
  return page.$$eval('#summary-body tr[data-lane]', (rows) =>
    rows.map((row) => {
      const count = (selector: string) =>
        Number(row.querySelector(selector)!.textContent!.split(' ')[0]!.replace(/,/g, ''));
      return {
        lane: row.querySelector('td.name')!.textContent!,
        admitted: count('td.admitted'),
        refused: count('td.refused'),
      };
    }),
  );
}

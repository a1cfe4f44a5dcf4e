/**
 * The documentation site (issue 35): `vitepress build docs`, as `pnpm docs:build` runs it, into a
 * temporary directory, served over loopback and read in Debian's Chromium as a visitor reads it.
 * Every page loads without a page error, a console error or a failed request of its own; every
 * link from one page of the site to another (or to a file of the site) points at something the
 * build wrote, and its `#anchor` at an element of that page. VitePress itself refuses a dead
 * link to a page at build time; the anchors, the assets and the playground are checked here.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, launchChromium } from '../playground/browser.js';

// The page functions below run in the browser; the root typecheck has no DOM library.
declare const document: {
  querySelectorAll(selector: string): Iterable<{ id: string; getAttribute(name: string): string | null }>;
  querySelector(selector: string): { textContent: string | null; __vue_app__?: unknown } | null;
};
declare const location: { href: string };

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const VITEPRESS = join(ROOT, 'node_modules/vitepress/bin/vitepress.js');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/** What one page showed: its errors, and the links and ids in its rendered document. */
interface Visit {
  readonly errors: string[];
  readonly links: string[];
  readonly ids: string[];
  readonly title: string;
}

let outDir: string;
let profile: string;
let server: Server;
let origin: string;
let context: BrowserContext;
const visits = new Map<string, Visit>();

/** Every file the build wrote, as its site path (`/docs/options.html`). */
function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [`/${relative(outDir, path).split('\\').join('/')}`];
  });
}

/** The file a site path names, as a static host serves it (`/` and `/x/` are their index.html). */
const fileOf = (pathname: string) => (pathname.endsWith('/') ? `${pathname}index.html` : pathname);

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  outDir = mkdtempSync(join(tmpdir(), 'sluice-site-'));
  await promisify(execFile)(process.execPath, [VITEPRESS, 'build', 'docs', '--outDir', outDir], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
  });
  server = createServer((request, response) => {
    const path = join(outDir, decodeURIComponent(fileOf(new URL(request.url!, 'http://x').pathname)));
    if (!path.startsWith(outDir) || !existsSync(path) || statSync(path).isDirectory()) {
      response.writeHead(404).end('not found');
      return;
    }
    response.writeHead(200, { 'content-type': TYPES[extname(path)] ?? 'application/octet-stream' });
    response.end(readFileSync(path));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  profile = mkdtempSync(join(tmpdir(), 'sluice-chromium-'));
  context = await launchChromium(profile, {
    // Four pages load at once: none of them is throttled for being in the background.
    args: [
      '--disable-background-timer-throttling',
      '--disable-renderer-backgrounding',
      '--disable-backgrounding-occluded-windows',
    ],
  });
  // Four pages at a time: most of a visit is waiting for the page's scripts.
  const queue = pages();
  const visitor = async () => {
    for (let path = queue.shift(); path !== undefined; path = queue.shift())
      visits.set(path, await visit(path));
  };
  await Promise.all([visitor(), visitor(), visitor(), visitor()]);
}, 180_000);

/** Loads one page, waits until Vue has hydrated it, and reads what it shows. */
async function visit(path: string): Promise<Visit> {
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()} (${message.location().url})`);
  });
  page.on('response', (response) => {
    if (response.url().startsWith(origin) && response.status() >= 400)
      errors.push(`${response.status()} ${response.url()}`);
  });
  try {
    const response = await page.goto(`${origin}${path}`, { waitUntil: 'load' });
    if (response?.status() !== 200) errors.push(`the page answered ${response?.status()}`);
    // The HTML is rendered at build time; VitePress then hydrates it (a mismatch is a console
    // error). Vue marks the mounted root.
    // Polled on a timer: requestAnimationFrame, the default, is throttled in pages not in front.
    await page.waitForFunction(() => document.querySelector('#app')?.__vue_app__ !== undefined, null, {
      polling: 50,
      timeout: 20_000,
    });
    const seen = await page.evaluate(() => ({
      links: [...document.querySelectorAll('a[href]')].map(
        (a) => new URL(a.getAttribute('href')!, location.href).href,
      ),
      ids: [...document.querySelectorAll('[id]')].map((element) => element.id),
      title: document.querySelector('.vp-doc h1')?.textContent ?? '',
    }));
    return { errors, ...seen };
  } finally {
    await page.close();
  }
}

afterAll(async () => {
  await context?.close();
  await new Promise((resolve) => server?.close(resolve));
  if (outDir !== undefined) rmSync(outDir, { recursive: true, force: true });
  if (profile !== undefined) rmSync(profile, { recursive: true, force: true });
});

/** The site's pages: every HTML file VitePress wrote, but its 404 page and the playground app. */
function pages(): string[] {
  return files(outDir)
    .filter((path) => path.endsWith('.html') && path !== '/404.html' && !path.startsWith('/playground/'))
    .map((path) => (path === '/index.html' ? '/' : path));
}

describe('the documentation site, built and read in Chromium', () => {
  it('has the README as its home page, the docs pages and every package README', () => {
    const built = pages();
    expect(built).toContain('/');
    for (const doc of ['options', 'algorithms', 'stores', 'load-shedding', 'playground', 'versioning'])
      expect(built).toContain(`/docs/${doc}.html`);
    const packages = readdirSync(join(ROOT, 'packages')).filter((name) =>
      existsSync(join(ROOT, 'packages', name, 'README.md')),
    );
    for (const name of packages) expect(built).toContain(`/packages/${name}/README.html`);
    expect(visits.get('/')?.title).toMatch(/^sluice/);
  });

  it('every page loads without a page error, a console error or a failed request', () => {
    const failures = [...visits].flatMap(([path, visit]) => visit.errors.map((error) => `${path}: ${error}`));
    expect(failures).toEqual([]);
  });

  it('every link within the site points at a file the build wrote, and at an anchor of its page', () => {
    const written = new Set(files(outDir));
    const broken: string[] = [];
    let checked = 0;
    for (const [path, visit] of visits) {
      for (const link of visit.links) {
        const url = new URL(link);
        if (url.origin !== origin) continue;
        checked++;
        const target = fileOf(url.pathname);
        if (!written.has(decodeURIComponent(target))) {
          broken.push(`${path} → ${url.pathname}`);
          continue;
        }
        // The playground keeps its state after '#': no anchor there.
        if (url.hash === '' || target.startsWith('/playground/')) continue;
        const page = visits.get(url.pathname === '/index.html' ? '/' : url.pathname);
        if (!page?.ids.includes(decodeURIComponent(url.hash.slice(1))))
          broken.push(`${path} → ${url.pathname}${url.hash}`);
      }
    }
    expect(checked).toBeGreaterThan(100);
    expect(broken).toEqual([]);
  });

  it('embeds the playground, built beside the pages, which runs in the frame', async () => {
    const page = await context.newPage();
    try {
      await page.goto(`${origin}/docs/playground.html`);
      const frame = page.frameLocator('iframe[title="The sluice playground"]');
      await expect
        .poll(() => frame.locator('body').getAttribute('data-state'), { timeout: 30_000 })
        .toBe('done');
    } finally {
      await page.close();
    }
  }, 60_000);
});

/**
 * The documentation site, generated from the repository's own markdown (issue 35): the README is
 * the home page, then docs/*.md, the package READMEs, ARCHITECTURE.md, RELIABILITY.md and the
 * benchmark's README, as GitHub shows them. The playground is built beside it (`/playground/`).
 *
 * `pnpm docs:build` writes docs/.vitepress/dist; test/docs/site.test.ts builds it into a temporary
 * directory and loads every page in Chromium.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, posix, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build as buildVite } from 'vite';
import { defineConfig } from 'vitepress';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const REPOSITORY = 'https://github.com/sluice-js/sluice';

const packageNames = readdirSync(join(ROOT, 'packages')).filter((name) =>
  existsSync(join(ROOT, 'packages', name, 'README.md')),
);
const docPages = readdirSync(join(ROOT, 'docs'))
  .filter((file) => file.endsWith('.md'))
  .map((file) => `docs/${file}`);

/** Every markdown file that is a page of the site, as its path in the repository. */
export const PAGES = [
  'README.md',
  'ARCHITECTURE.md',
  'RELIABILITY.md',
  'CONTRIBUTING.md',
  'CHANGELOG.md',
  'bench/README.md',
  'bench/redis.md',
  ...docPages,
  ...packageNames.map((name) => `packages/${name}/README.md`),
  ...packageNames.map((name) => `packages/${name}/CHANGELOG.md`),
].filter((file) => existsSync(join(ROOT, file)));

/** What `srcExclude` leaves out: every markdown file of the repository that is not a page. */
function notPages(dir = ROOT): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return notPages(path);
    const file = relative(ROOT, path).split('\\').join('/');
    return file.endsWith('.md') && !PAGES.includes(file) ? [file] : [];
  });
}

/**
 * A relative link as GitHub reads it, for the site: to a page, the page (the README is `/`); to
 * any other file or folder of the repository (a source file, an example, LICENSE), that file on
 * GitHub, since the site does not serve it.
 */
function siteLink(href: string, from: string): string {
  if (/^[a-z][a-z+.-]*:/i.test(href) || href.startsWith('#') || href.startsWith('/')) return href;
  const [path = '', hash] = href.split('#');
  const target = posix.normalize(posix.join(posix.dirname(from), path));
  const anchor = hash === undefined ? '' : `#${hash}`;
  if (PAGES.includes(target)) return target === 'README.md' ? `/${anchor}` : `/${target}${anchor}`;
  const kind = existsSync(join(ROOT, target)) && statSync(join(ROOT, target)).isDirectory() ? 'tree' : 'blob';
  return `${REPOSITORY}/${kind}/main/${target}${anchor}`;
}

/** What GitHub renders as HTML: comments and the elements a README uses. */
const HTML =
  /^\s*<(!--|\/?(a|b|br|code|details|div|em|i|iframe|img|kbd|p|picture|pre|script|source|span|strong|sub|summary|sup|table|tbody|td|th|thead|tr|style)\b)/i;

/**
 * GitHub's heading anchors: lower case, every character but letters, digits, spaces, `-` and `_`
 * dropped, each space a `-` (markdown-it-anchor numbers repeated ones `-1`, `-2` as GitHub does).
 */
function githubSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The guide's pages, in reading order, with their titles in the sidebar. */
const GUIDE: readonly (readonly [string, string])[] = [
  ['docs/options.md', 'Options reference'],
  ['docs/algorithms.md', 'Algorithms'],
  ['docs/stores.md', 'Stores'],
  ['docs/load-shedding.md', 'Load shedding'],
  ['docs/playground.md', 'Playground'],
  ['docs/migrating-from-express-rate-limit.md', 'From express-rate-limit'],
  ['docs/migrating-from-fastify-rate-limit.md', 'From @fastify/rate-limit'],
  ['docs/versioning.md', 'Versioning'],
];

const title = (file: string) =>
  file === 'README.md'
    ? 'Introduction'
    : file
        .replace(/^docs\//, '')
        .replace(/\.md$/, '')
        .replace(/-/g, ' ');

export default defineConfig({
  title: 'sluice',
  description: 'Rate limiting and load shedding for Node.js HTTP services',
  srcDir: '..',
  srcExclude: notPages(),
  rewrites: { 'README.md': 'index.md' },
  base: process.env.SLUICE_DOCS_BASE ?? '/',
  // No icon of its own: say so, rather than let every browser ask for /favicon.ico and get a 404.
  head: [['link', { rel: 'icon', href: 'data:,' }]],
  cleanUrls: false,
  lastUpdated: false,
  markdown: {
    // Anchors as GitHub makes them, so a link to `#5-stress-keep-limiting` works in both places.
    anchor: { slugify: githubSlug },
    config(md) {
      // GitHub shows a word in angle brackets that is no HTML element (`› <algorithm>:`) as
      // text; Vue would read it as an element and refuse the page. The same here.
      md.core.ruler.push('unknown-tags-as-text', (state) => {
        const asText = (token: { type: string; content: string }) => {
          if ((token.type === 'html_inline' || token.type === 'html_block') && !HTML.test(token.content)) {
            token.type = token.type === 'html_inline' ? 'text' : 'paragraph_text';
          }
        };
        for (const token of state.tokens) {
          asText(token);
          for (const child of token.children ?? []) asText(child);
        }
      });
      md.renderer.rules.paragraph_text = (tokens, idx) =>
        `<p>${md.utils.escapeHtml(tokens[idx]!.content)}</p>`;
      const render = md.renderer.rules.link_open;
      md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
        const token = tokens[idx]!;
        const href = token.attrGet('href');
        const from = relative(ROOT, (env as { realPath?: string; path: string }).realPath ?? env.path)
          .split('\\')
          .join('/');
        if (href !== null) token.attrSet('href', siteLink(href, from));
        return render === undefined
          ? self.renderToken(tokens, idx, options)
          : render(tokens, idx, options, env, self);
      };
    },
  },
  themeConfig: {
    search: { provider: 'local' },
    socialLinks: [{ icon: 'github', link: REPOSITORY }],
    sidebar: [
      {
        text: 'Guide',
        items: [
          { text: 'Introduction', link: '/' },
          ...GUIDE.filter(([file]) => PAGES.includes(file)).map(([file, text]) => ({
            text,
            link: `/${file}`,
          })),
          // A page added to docs/ shows up even before it is given a place above.
          ...docPages
            .filter((file) => !GUIDE.some(([guide]) => guide === file))
            .map((file) => ({ text: title(file), link: `/${file}` })),
        ],
      },
      {
        text: 'Packages',
        items: packageNames.map((name) => ({ text: `@sluice/${name}`, link: `/packages/${name}/README.md` })),
      },
      {
        text: 'Project',
        items: [
          ['ARCHITECTURE.md', 'Architecture'],
          ['RELIABILITY.md', 'Reliability'],
          ['bench/README.md', 'Benchmarks'],
          ['bench/redis.md', 'The Redis path'],
          ['CONTRIBUTING.md', 'Contributing'],
          ['CHANGELOG.md', 'Changelog'],
        ]
          .filter(([file]) => PAGES.includes(file!))
          .map(([file, text]) => ({ text: text!, link: `/${file}` })),
      },
    ],
  },
  /** The playground page, built as `pnpm --filter @sluice/playground build` does, into /playground/. */
  async buildEnd(site) {
    const page = resolve(ROOT, 'packages/playground');
    await buildVite({
      root: page,
      configFile: join(page, 'vite.config.ts'),
      mode: 'production',
      logLevel: 'warn',
      build: { outDir: join(site.outDir, 'playground'), emptyOutDir: true },
    });
  },
});

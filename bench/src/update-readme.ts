/**
 * Replaces the results section of bench/README.md (between `<!-- bench:start -->` and
 * `<!-- bench:end -->`) with bench/results/readme.md, written by the last full `pnpm bench`. The
 * block's links are written from the repository's root (`bench/results/…`); in bench/README.md
 * they are made relative to it (`results/…`). Touches nothing outside the markers; does nothing if
 * they are missing. The repository's README quotes a few figures of this section by hand: check
 * them after a rerun.
 *
 * usage: pnpm --filter @sluice/bench run bench:readme
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const README = fileURLToPath(new URL('../README.md', import.meta.url));
const BLOCK = fileURLToPath(new URL('../results/readme.md', import.meta.url));
const START = '<!-- bench:start -->';
const END = '<!-- bench:end -->';

const readme = await readFile(README, 'utf8');
const start = readme.indexOf(START);
const end = readme.indexOf(END);
if (start === -1 || end === -1 || end < start) {
  process.stderr.write(`bench/README.md has no ${START} … ${END} section: nothing changed\n`);
} else {
  const block = (await readFile(BLOCK, 'utf8')).trim().replaceAll('](bench/', '](');
  await writeFile(README, `${readme.slice(0, start + START.length)}\n${block}\n${readme.slice(end)}`);
  process.stderr.write('bench/README.md: results section updated from bench/results/readme.md\n');
}

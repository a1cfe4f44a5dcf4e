/**
 * Watches the given files (argv after the first) from another process while a test opens a new
 * directory: polls their sizes as fast as it can and prints, as JSON, the size each had when first
 * seen. Prints `ready` once polling, and stops when the file named first exists (or after 30 s).
 */
import { existsSync, statSync } from 'node:fs';

const [stop, ...files] = process.argv.slice(2);
const first: Record<string, number> = {};
const until = Date.now() + 30_000;
process.stdout.write('ready\n');
while (!existsSync(stop!) && Date.now() < until) {
  for (const file of files) {
    if (first[file] !== undefined) continue;
    const size = statSync(file, { throwIfNoEntry: false })?.size;
    if (size !== undefined) first[file] = size;
  }
}
process.stdout.write(`${JSON.stringify(first)}\n`);

/**
 * A focused look at a few HTTP subjects, for work on an adapter: the HTTP section's method (fresh
 * servers every round, ratios within a round) on the subjects named, with their bare apps, and
 * more rounds. Prints the rows and sluice head to head; writes nothing under bench/results.
 * Runs against the BUILT packages, as `pnpm bench` does.
 *
 * usage: node --import tsx src/http/focus.ts [--only=fastify:sluice:memory,fastify:peer:memory,…]
 *          [--rounds=7] [--seconds=1] [--warmup=1.5] [--slices=4]
 */
import { http } from './section.js';

const args = process.argv.slice(2);
const arg = (name: string, fallback: string) =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;

const section = await http(
  {
    ids: arg('only', 'fastify:sluice:memory,fastify:peer:memory').split(','),
    rounds: Number(arg('rounds', '7')),
    seconds: Number(arg('seconds', '1')),
    warmupSeconds: Number(arg('warmup', '1.5')),
    slices: Number(arg('slices', '4')),
    quick: false,
  },
  (line) => process.stderr.write(`${line}\n`),
);
if (section.status === 'measured') process.stdout.write(`${section.result.markdown}\n`);

/**
 * The order in which a run starts its files (vitest.config.ts's `sequence.sequencer`). The two
 * test processes take files from one queue, in this order, and a process keeps running the files
 * of one project (one Redis client) until the next in the queue is another project's, when it is
 * replaced by a new one: so each project's files stay together, and a run ends when the last file
 * ends. vitest's own order (projects by name, then the longest files first, by the durations it
 * cached from the last run, or the largest files first without that cache) left the run's end to
 * chance twice over: a clean clone (CI) has no cache, and there 1 KB files that take 15 to 20 s
 * (test/adapters/adapters*.test.ts) started after a hundred larger, shorter ones; and the run
 * always ended on the node-redis project (name order: last), whose longest file takes about 25 s,
 * so one process could idle while the other finished it.
 *
 * Here: the projects with few files first and the main one (`ioredis`, every file) last, so that
 * the run ends on its many short files and both processes finish close together; inside a project,
 * the files of `SLOW_FIRST` first, in its order (the same with or without vitest's cache), then
 * vitest's order (of the rest, none took more than about 5 s).
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Projects that start first, in this order; the others (`ioredis`, the release tier's) follow by name. */
const PROJECTS_FIRST = ['node-redis', 'iovalkey', 'ioredis6'];

/**
 * The files that take longest (over ~5 s on the 2-core machine, whichever project runs them),
 * longest first, but those that mostly wait (app processes, Redis faults, failovers: one core's
 * worth of CPU or less) alternating with those that mostly compute (the adapter suites, the Lua
 * twins' random traces, simulations), so that the two processes do not both wait at once while a
 * core idles. Only their order depends on this list: a file missing from it still runs
 * (test/architecture/test-tiers.test.ts checks that every file named here exists).
 */
export const SLOW_FIRST = [
  'test/reliability/faults.test.ts',
  'test/adapters/adapters-redis.test.ts',
  'test/reliability/cluster-failover.test.ts',
  'test/redis/differential.test.ts',
  'test/server/workers.test.ts',
  'test/reliability/hostile-input.test.ts',
  'test/reliability/outage-fleet.test.ts',
  'test/playground/adaptive-sim.test.ts',
  'test/redis/synced-fleet.test.ts',
  'test/adapters/adapters.test.ts',
  'test/redis/fleet.test.ts',
  'test/reliability/concurrency.test.ts',
  'test/redis/failure-policy.test.ts',
  'test/server/expiry.test.ts',
  'test/reliability/lease-faults.test.ts',
  'test/redis/refund.test.ts',
  'test/server/server-store-failure.test.ts',
  'test/redis/synced-store.test.ts',
  'test/server/scale-out.test.ts',
  'test/redis/cluster-shards.test.ts',
  'test/server/rls-cli.test.ts',
  'test/redis/store-behaviour.test.ts',
  'test/redis/faults.test.ts',
  'test/playground/adaptive-bench-shape.test.ts',
  'test/server/persistence.test.ts',
  'test/host/cross-process.test.ts',
  'test/redis/cluster-down.test.ts',
];

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const vitests = await super.sort(files);
    const projects = [...new Set(vitests.map((file) => file.project.name))];
    const rank = (list: readonly string[], index: number) => (index === -1 ? list.length : index);
    const key = (file: TestSpecification, position: number) => [
      rank(PROJECTS_FIRST, PROJECTS_FIRST.indexOf(file.project.name)),
      projects.indexOf(file.project.name),
      rank(
        SLOW_FIRST,
        SLOW_FIRST.findIndex((path) => file.moduleId.endsWith(`/${path}`)),
      ),
      position,
    ];
    const keyed = vitests.map((file, position) => ({ file, key: key(file, position) }));
    keyed.sort((a, b) => {
      for (let i = 0; i < a.key.length; i++) if (a.key[i] !== b.key[i]) return a.key[i]! - b.key[i]!;
      return 0;
    });
    return keyed.map(({ file }) => file);
  }
}

/**
 * A focused look at the Redis section, for work on @sluice/redis: a few subjects, many short
 * interleaved rounds, and where the time goes — Redis-side µs per script call (`INFO
 * commandstats`), the CPU Redis used and the CPU this process used (both as a share of one core).
 * Writes nothing under bench/results. Runs against the BUILT packages, as `pnpm bench` does.
 *
 * usage: node --import tsx src/redis/focus.ts [--only=floor,sluice:token-bucket,…] [--ms=500]
 *          [--rounds=7] [--pipelining=off|on|both] [--before=path/to/an/older/build/index.js]
 *
 * `--before` adds the sluice subjects of another build of @sluice/redis (e.g. one made from an
 * earlier commit) to the same run, labelled "(before)", for a before/after on the same machine state.
 */
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { startRedis } from '../lib/redis-server.js';
import { formatRate, formatRatio, median, spread } from '../lib/stats.js';
import { drive, errors, type RedisStoreCtor, subjects } from './section.js';

const args = process.argv.slice(2);
const arg = (name: string, fallback: string) =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const only = arg(
  'only',
  'floor,sluice:token-bucket,sluice:layered,rate-limiter-flexible,sluice:abusive-deny-cache',
).split(',');
const ms = Number(arg('ms', '500'));
const rounds = Number(arg('rounds', '7'));
const pipelining = arg('pipelining', 'off');
const before = arg('before', '');

/** Sum of calls and µs of the script commands since the last CONFIG RESETSTAT, and Redis CPU seconds. */
async function redisSide(admin: Redis): Promise<{ calls: number; usec: number; cpu: number }> {
  const info = `${await admin.info('commandstats')}\n${await admin.info('cpu')}`;
  let calls = 0;
  let usec = 0;
  for (const m of info.matchAll(/^cmdstat_(evalsha|eval|evalsha_ro):calls=(\d+),usec=(\d+)/gm)) {
    calls += Number(m[2]);
    usec += Number(m[3]);
  }
  const user = Number(/^used_cpu_user:([\d.]+)/m.exec(info)?.[1] ?? 0);
  const sys = Number(/^used_cpu_sys:([\d.]+)/m.exec(info)?.[1] ?? 0);
  return { calls, usec, cpu: user + sys };
}

async function main(): Promise<void> {
  const mod = (await import('@sluice/redis')) as { RedisStore: RedisStoreCtor };
  const server = await startRedis();
  const admin = new Redis({ port: server.port, host: '127.0.0.1' });
  try {
    for (const piped of pipelining === 'both' ? [false, true] : [pipelining === 'on']) {
      const client = new Redis({ port: server.port, host: '127.0.0.1', enableAutoPipelining: piped });
      // The other build registers its scripts under the same ioredis command names: on a client of
      // its own, or it would run this build's scripts (a client keeps the first registration).
      const olderClient = new Redis({ port: server.port, host: '127.0.0.1', enableAutoPipelining: piped });
      const older =
        before === ''
          ? []
          : subjects(
              ((await import(pathToFileURL(before).href)) as { RedisStore: RedisStoreCtor }).RedisStore,
            )
              .filter((s) => s.id.startsWith('sluice') && only.includes(s.id))
              .map((s) => ({
                ...s,
                label: `${s.label} (before)`,
                make: () => s.make(olderClient),
              }));
      const list = [...subjects(mod.RedisStore).filter((s) => only.includes(s.id)), ...older].map((s) => ({
        s,
        op: s.make(client),
        ops: [] as number[],
        usPerCall: [] as number[],
        redisCpu: [] as number[],
        nodeCpu: [] as number[],
      }));
      errors.clear();
      for (const x of list) await drive(x.op, 300);
      for (let r = 0; r < rounds; r++) {
        for (const x of list) {
          await admin.config('RESETSTAT');
          const before = await redisSide(admin);
          const cpu = process.cpuUsage();
          const wall = performance.now();
          x.ops.push(await drive(x.op, ms));
          const seconds = (performance.now() - wall) / 1000;
          const used = process.cpuUsage(cpu);
          const after = await redisSide(admin);
          if (after.calls > 0) x.usPerCall.push(after.usec / after.calls);
          x.redisCpu.push((after.cpu - before.cpu) / seconds);
          x.nodeCpu.push((used.user + used.system) / 1e6 / seconds);
        }
      }
      const floor = median(list.find((x) => x.s.id === 'floor')?.ops ?? [Number.NaN]);
      console.log(
        `\n${piped ? 'auto-pipelining on' : 'auto-pipelining off'}: ${rounds} rounds × ${ms} ms, medians`,
      );
      console.log('subject | decisions/s | spread | × floor | Redis µs/script call | Redis CPU | node CPU');
      for (const x of list) {
        const e = errors.get(x.s.id) ?? 0;
        console.log(
          [
            x.s.label,
            formatRate(median(x.ops)),
            `${(spread(x.ops) * 100).toFixed(0)}%`,
            formatRatio(median(x.ops) / floor),
            x.usPerCall.length > 0 ? median(x.usPerCall).toFixed(2) : '-',
            `${(median(x.redisCpu) * 100).toFixed(0)}%`,
            `${(median(x.nodeCpu) * 100).toFixed(0)}%`,
            e > 0 ? `INVALID: ${e} store errors` : '',
          ].join(' | '),
        );
      }
      client.disconnect();
      olderClient.disconnect();
    }
  } finally {
    admin.disconnect();
    await server.stop();
  }
}

await main();

/**
 * `pnpm bench` (full) and `pnpm bench:quick` (CI: under a minute, so the benchmark cannot rot).
 * Runs every section in one go, interleaving subjects and reporting medians and ratios, then writes
 * bench/results/latest.md, latest.json and ratios.svg. Exits non-zero only when the benchmark itself
 * breaks: there are no performance assertions here, the targets are reported, not enforced.
 *
 * Runs against the BUILT packages (packages/<name>/dist, resolved through node_modules as users
 * resolve them): run `pnpm build` first. A stale build is reported at the top of the results.
 *
 * Pinned (lib/pinning.ts): this process (load generator, Redis clients, in-process subjects, and
 * the children it forks for them) on one core, the HTTP server under test and the Redis section's
 * redis-server on the other. Prints `uptime` before and after; a full run refuses to start at a
 * 1-minute load average of 1 or more (`--allow-load` runs anyway and marks every table as taken on
 * a busy machine).
 *
 * usage: main.ts [--quick] [--allow-load] [--only=in-process,memory,redis,http]
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { type HttpResult, http } from './http/section.js';
import { RETURNING } from './in-process/returning.js';
import { type InProcessResult, inProcess } from './in-process/section.js';
import { ALGORITHMS, PEERS, subject } from './in-process/subjects.js';
import { machine, staleBuilds } from './lib/machine.js';
import { benchCores, cpuTicks, pin, QUIET_LOAD, quietEnough, stealShare, uptime } from './lib/pinning.js';
import { type MemoryResult, memory } from './memory/section.js';
import { type RedisResult, redis } from './redis/section.js';
import {
  configList,
  formatRate,
  formatRatio,
  inProcessTable,
  machineLine,
  memoryTable,
  returningTable,
  type Section,
  type Verdict,
  verdictTable,
} from './report/markdown.js';
import { type Bar, barCharts, type Chart } from './report/svg.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const allowLoad = args.includes('--allow-load');
const only = args
  .find((a) => a.startsWith('--only='))
  ?.slice(7)
  .split(',');
const wanted = (section: string) => only === undefined || only.includes(section);
const log = (line: string) => process.stderr.write(`${line}\n`);

const MODE = quick
  ? {
      throughput: { roundMs: 40, rounds: 3, warmupMs: 40 },
      memoryKeys: 100_000,
      redisMs: 300,
      redisRounds: 2,
      httpSeconds: 0.5,
      httpRounds: 1,
      httpWarmupSeconds: 0.4,
      httpSlices: 1,
    }
  : {
      throughput: { roundMs: 250, rounds: 5, warmupMs: 300 },
      memoryKeys: 1_000_000,
      redisMs: 1000,
      redisRounds: 5,
      httpSeconds: 1,
      httpRounds: 5,
      httpWarmupSeconds: 1.5,
      httpSlices: 4,
    };

const RESULTS = fileURLToPath(new URL('../results/', import.meta.url));

async function section<T>(name: string, run: () => Promise<Section<T>>): Promise<Section<T>> {
  if (!wanted(name)) return { status: 'skipped', reason: 'not selected (--only)' };
  const started = Date.now();
  log(`\n== ${name}`);
  const result = await run();
  log(
    `   ${name}: ${result.status === 'measured' ? 'done' : `skipped: ${result.reason}`} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  return result;
}

function verdicts(throughput: Section<InProcessResult>, heap: Section<MemoryResult>): Verdict[] {
  const out: Verdict[] = [];
  if (throughput.status === 'measured') {
    const { rows, scenarios, returning } = throughput.result;
    const row = (id: string) => rows.find((r) => r.id === id)!;
    const both = (ratios: number[]) => ratios.map(formatRatio).join(' / ');
    // Issue 24: a limit that uses no plan, block, shadow or charge pays nothing for them.
    for (const name of Object.keys(ALGORITHMS)) {
      const ratios = scenarios.map((s) => row(`sluice:${name}`).scenarios[s]!.ratioToFloor);
      out.push({
        target: `${name}, not awaited (checkSync), ≥ 0.7× the inline floor (hot / 10k)`,
        met: ratios.every((r) => r >= 0.7),
        figure: both(ratios),
      });
    }
    // Issue 36: the four algorithms express-rate-limit and the other peers are compared on.
    const versusErl = (id: string) => scenarios.map((s) => row(id).versus!['express-rate-limit']![s]!);
    for (const name of ['token-bucket', 'gcra', 'fixed-window', 'sliding-window-log']) {
      const ratios = versusErl(`sluice-await:${name}`);
      out.push({
        target: `${name}, awaited, ≥ 1.0× express-rate-limit's MemoryStore awaited (hot / 10k)`,
        met: ratios.every((r) => r >= 1),
        // What any synchronous answer pays for being awaited: the same floor awaited as a plain
        // value, and as the promise of an async function (see floorDecisionAsync in subjects.ts).
        figure: `${both(ratios)} (the inline floor returning a decision, awaited: ${both(versusErl('floor-decision-await'))}; from an async function: ${both(versusErl('floor-decision-async'))})`,
      });
    }
    for (const name of Object.keys(ALGORITHMS)) {
      // Each way of calling against the peers called that way: awaited against the promise APIs,
      // not awaited against the synchronous one.
      const versus = [row(`sluice:${name}`), row(`sluice-await:${name}`)].flatMap((r) =>
        Object.entries(r.versus!).map(
          ([peer, by]) => [peer, Math.min(...scenarios.map((s) => by[s]!))] as const,
        ),
      );
      const worst = versus.reduce((a, b) => (b[1] < a[1] ? b : a));
      out.push({
        target: `${name} ahead of every peer called the same way (both scenarios)`,
        met: worst[1] > 1,
        figure: `lowest ${formatRatio(worst[1])} (${worst[0]})`,
      });
    }
    const back = returning.rows.find((r) => r.id === 'returning:sluice')!;
    out.push({
      target: `returning clients (${returning.clients.toLocaleString('en')} at 1 req/s) ≥ 0.7× the same limiter with state kept`,
      met: back.ratioToKept >= 0.7,
      figure: `${formatRatio(back.ratioToKept)} (${formatRate(back.opsPerSecond)} per CPU-s; ${back.inserts} of ${returning.clients.toLocaleString('en')} found no state)`,
    });
  }
  if (heap.status === 'measured') {
    const row = heap.result.rows.find((r) => r.id === 'sluice:token-bucket')!;
    out.push({
      target: `token-bucket ≤ 120 heap bytes per key (${heap.result.keys.toLocaleString('en')} keys)`,
      met: row.bytesPerKey <= 120,
      figure: `${row.bytesPerKey.toFixed(0)} bytes`,
    });
  }
  return out;
}

/** #3's targets, from the rows without auto-pipelining (the default client). */
function redisVerdicts(redisSection: Section<RedisResult>): Verdict[] {
  if (redisSection.status !== 'measured') return [];
  const rate = (id: string) =>
    redisSection.result.rows.find((r) => r.id === id && !r.pipelining)?.opsPerSecond;
  const floor = rate('floor');
  const single = rate('sluice:token-bucket');
  if (floor === undefined || single === undefined) return [];
  const out: Verdict[] = [];
  for (const name of ['token-bucket', 'gcra']) {
    const ops = rate(`sluice:${name}`);
    if (ops === undefined) continue;
    out.push({
      target: `Redis: ${name}, one limit, ≥ 1.1× the EVALSHA floor`,
      met: ops / floor >= 1.1,
      figure: formatRatio(ops / floor),
    });
  }
  // Issue 24: the fixed window level with rate-limit-redis's INCR script (the simplest peer).
  const fixed = rate('sluice:fixed-window');
  const rlr = rate('rate-limit-redis');
  if (fixed !== undefined && rlr !== undefined) {
    out.push({
      target: 'Redis: fixed-window ≥ 1.0× rate-limit-redis (its INCR script, same limit)',
      met: fixed / rlr >= 1,
      figure: formatRatio(fixed / rlr),
    });
  }
  const layered = rate('sluice:layered');
  if (layered !== undefined) {
    out.push({
      target: 'Redis: 3 layered limits ≥ 0.85× one limit (token-bucket)',
      met: layered / single >= 0.85,
      figure: formatRatio(layered / single),
    });
    // Issue 16's measure: against the raw EVALSHA token bucket, with the default client and with
    // auto-pipelining (where Redis's own CPU, three limits' Lua, sets the pace).
    const piped = (id: string) =>
      redisSection.result.rows.find((r) => r.id === id && r.pipelining)?.opsPerSecond;
    const pipedLayered = piped('sluice:layered');
    const pipedFloor = piped('floor');
    const ratios = [layered / floor, ...(pipedLayered && pipedFloor ? [pipedLayered / pipedFloor] : [])];
    out.push({
      target:
        'Redis: 3 layered limits on one user key ≥ 0.8× the EVALSHA floor (default client / auto-pipelining)',
      met: ratios.every((r) => r >= 0.8),
      figure: ratios.map(formatRatio).join(' / '),
    });
  }
  // The deny cache against rate-limiter-flexible on the same abusive traffic: plain, and with its
  // own local block (`inMemoryBlockOnConsumed`), the like-for-like comparison.
  const cached = rate('sluice:abusive-deny-cache');
  const rlf = rate('rate-limiter-flexible:abusive');
  const rlfBlock = rate('rate-limiter-flexible:abusive-in-memory-block');
  if (cached !== undefined && rlf !== undefined) {
    out.push({
      target: 'Redis: deny cache on, 90% abusive, ≥ 5× rate-limiter-flexible (same traffic)',
      met: cached / rlf >= 5,
      figure: formatRatio(cached / rlf),
    });
  }
  if (cached !== undefined && rlfBlock !== undefined) {
    out.push({
      target: "Redis: deny cache on, 90% abusive, ahead of rate-limiter-flexible's in-memory block",
      met: cached / rlfBlock > 1,
      figure: formatRatio(cached / rlfBlock),
    });
  }
  return out;
}

function charts(
  throughput: Section<InProcessResult>,
  httpSection: Section<HttpResult>,
  redisSection: Section<RedisResult>,
): Chart[] {
  const out: Chart[] = [];
  if (throughput.status === 'measured') {
    for (const s of throughput.result.scenarios) {
      const bars: Bar[] = throughput.result.rows
        .filter(
          (r) =>
            !r.id.startsWith('raw:') && !r.id.startsWith('sluice-') && !r.id.startsWith('floor-decision'),
        )
        .map((r) => ({
          label: r.label.replace(' (floor)', ''),
          value: r.scenarios[s]!.ratioToFloor,
          kind: r.id === 'floor' ? 'reference' : r.id.startsWith('sluice') ? 'sluice' : 'peer',
        }));
      out.push({
        title: `In-process decisions per CPU-second, ${s === 'hot' ? 'hot key' : '10,000 keys'}: ratio to the inline Map token bucket`,
        subtitle: 'higher is better; medians of interleaved rounds; 1× = the floor',
        bars,
      });
    }
  }
  if (redisSection.status === 'measured') out.push(...redisSection.result.charts);
  if (httpSection.status === 'measured') out.push(...httpSection.result.charts);
  return out;
}

/** The block `update-readme.ts` puts between the bench markers of bench/README.md. */
function readmeBlock(
  m: ReturnType<typeof machine>,
  quick: boolean,
  checks: readonly Verdict[],
  throughput: Section<InProcessResult>,
  heap: Section<MemoryResult>,
  redisSection: Section<RedisResult>,
  httpSection: Section<HttpResult>,
  load: string,
): string {
  const lines = [
    `Measured ${m.date.slice(0, 10)} on ${m.cpu}, ${m.cores} cores, Node ${m.node}${quick ? ' (quick mode)' : ''}: a shared 2-core VM, so read the ratios, not the absolute figures. Rerun with \`pnpm build && pnpm bench\`; full tables, every subject's exact configuration and the method are in [bench/results/latest.md](bench/results/latest.md).`,
    '',
    load,
    '',
    '![Decisions per second as a ratio to an inline Map token bucket](bench/results/ratios.svg)',
    '',
  ];
  if (throughput.status === 'measured') {
    const t = throughput.result;
    const rows = t.rows.filter((r) => !r.id.startsWith('raw:'));
    lines.push(
      `In-process decisions per CPU-second (memory stores; median of ${t.settings.rounds} interleaved rounds, ratio to the floor measured beside it):`,
      '',
      inProcessTable({ ...t, rows }),
      '',
      `Returning clients under their limit (${t.returning.clients.toLocaleString('en')} clients at 1 req/s, simulated time):`,
      '',
      returningTable(t.returning),
      '',
    );
  }
  if (heap.status === 'measured')
    lines.push(
      `Heap bytes per key at ${heap.result.keys.toLocaleString('en')} keys:`,
      '',
      memoryTable(heap.result),
      '',
    );
  for (const [name, s] of [
    ['Redis', redisSection],
    ['HTTP', httpSection],
  ] as const) {
    if (s.status === 'measured') lines.push(s.result.markdown, '');
    else lines.push(`${name}: not measured yet (${s.reason}).`, '');
  }
  if (checks.length > 0) lines.push('Targets:', '', verdictTable(checks), '');
  return lines.join('\n');
}

async function main(): Promise<void> {
  const m = machine();
  const stale = await staleBuilds(['core', 'redis', 'express', 'fastify']);
  log(`sluice bench (${quick ? 'quick' : 'full'}) · ${machineLine(m)}`);
  const before = uptime();
  const ticksBefore = cpuTicks();
  log(`uptime before: ${before}`);
  const { load, quiet } = quietEnough();
  // A figure taken on a busy machine is not evidence; quick runs (CI's smoke run) only say so.
  if (!quiet && !quick && !allowLoad) {
    log(
      `refused: the 1-minute load average is ${load.toFixed(2)} (≥ ${QUIET_LOAD}); stop what runs beside the bench, or pass --allow-load to mark the figures as taken on a busy machine`,
    );
    process.exitCode = 2;
    return;
  }
  const cores = benchCores();
  if (cores !== undefined) {
    // Children forked from here (the in-process section's processes) inherit it.
    pin(process.pid, cores.generator);
    log(
      `pinned: this process (load generator) on core ${cores.generator}, servers under test on core ${cores.subject}`,
    );
  } else log('not pinned (no taskset, one core, or SLUICE_BENCH_PIN=off)');
  log(`@sluice/core resolves to ${import.meta.resolve('@sluice/core')}`);
  if (stale.length > 0)
    log(`WARNING: sources newer than the build for ${stale.join(', ')}: run pnpm build first`);

  const throughput = await section('in-process', async () => ({
    status: 'measured' as const,
    result: await inProcess(MODE.throughput, log),
  }));
  const heap = await section('memory', async () => ({
    status: 'measured' as const,
    result: await memory(MODE.memoryKeys, log),
  }));
  const redisSection = await section('redis', () =>
    redis({ ms: MODE.redisMs, rounds: MODE.redisRounds, cores }, log),
  );
  const httpSection = await section('http', () =>
    http(
      {
        seconds: MODE.httpSeconds,
        rounds: MODE.httpRounds,
        warmupSeconds: MODE.httpWarmupSeconds,
        slices: MODE.httpSlices,
        quick,
        cores,
      },
      log,
    ),
  );

  const after = uptime();
  const steal = stealShare(ticksBefore, cpuTicks());
  log(`uptime after: ${after}; CPU steal during the run: ${steal}`);
  const checks = [
    ...verdicts(throughput, heap),
    ...redisVerdicts(redisSection),
    ...(httpSection.status === 'measured' ? httpSection.result.verdicts : []),
  ];
  const md: string[] = [
    `# sluice benchmarks (${quick ? 'quick mode: short rounds, figures are rough' : 'full run'})`,
    '',
    `**Machine**: ${machineLine(m)}.  `,
    `${m.note}`,
    '',
    `Command: \`pnpm bench${quick ? ':quick' : ''}\` (bench/src/main.ts), against the built packages (\`packages/*/dist\`, after \`pnpm build\`).${stale.length > 0 ? ` **Warning: the build was older than the sources of ${stale.join(', ')}.**` : ''}`,
    '',
    `Load: before \`${before}\`; after \`${after}\`. CPU steal during the run (time the hypervisor gave to other tenants): ${steal}.${quiet ? '' : ` **Started at load ${load.toFixed(2)} (≥ ${QUIET_LOAD}): these figures are not evidence.**`}  `,
    cores === undefined
      ? 'Not pinned: the generator and the servers shared the cores.'
      : `Pinned with taskset: the bench process (load generator, Redis clients, in-process subjects) on core ${cores.generator}; the HTTP server under test and the Redis section's redis-server on core ${cores.subject} (the HTTP section's redis-server beside the generator).`,
    '',
    '## Targets',
    '',
    checks.length > 0 ? verdictTable(checks) : '_No in-process or memory section was run._',
    '',
  ];
  if (throughput.status === 'measured') {
    const t = throughput.result;
    md.push(
      '## In-process decisions per second (memory stores)',
      '',
      `Decisions per CPU-second of the measuring process (all its threads, GC included: on a shared machine CPU time moves far less with other tenants' load than wall time). Medians of ${t.settings.rounds} interleaved rounds of ${t.settings.roundMs} ms after ${t.settings.warmupMs} ms of warm-up for every subject. One process per sluice algorithm, holding that algorithm, the floor and every peer (so each sluice figure is compared with a floor measured beside it); the floor and peer rows are medians over those ${Object.keys(ALGORITHMS).length} processes. "raw" rows run the pure algorithm over a bare \`Map\`, without the limiter and the store, to show where time goes. Every subject is called as its users call it, inside the harness's own async loop, with no wrapper of its own: peers whose API returns a promise are awaited, and so is sluice in its "(awaited)" rows (\`await limiter.check(key)\`, as the README shows it; the other sluice rows call \`limiter.checkSync(key)\`, its synchronous form); sluice rows are compared with the peers called the same way. Sluice reads the clock in its store as the peers do; the "{ now }" rows pass \`{ now: Date.now() }\` instead (validated on every call).`,
      '',
      inProcessTable(t),
      '',
      '### Returning clients under their limit',
      '',
      `${t.returning.clients.toLocaleString('en')} clients, each coming back every second of simulated time (0.1 ms per decision, handed as \`now\`), median of ${t.settings.rounds} interleaved rounds in their own process. A client takes a token a second and two come back: its bucket is full again half a second after each visit. "State kept" is the same limiter, traffic and call on a bucket that never fills between visits. The last column counts, over one more untimed pass, the decisions that found no state for their client (the insert path).`,
      '',
      returningTable(t.returning),
      '',
      `Refused decisions during the run (must be 0): ${t.rows.reduce((n, r) => n + r.refused, 0) + t.returning.rows.reduce((n, r) => n + r.refused, 0)}.`,
      '',
    );
  }
  if (heap.status === 'measured') {
    md.push(
      '## Memory: heap bytes per key',
      '',
      `${heap.result.keys.toLocaleString('en')} keys, one decision each, each subject in a fresh \`node --expose-gc\` process: \`heapUsed\` after \`gc()\` minus before, divided by the key count. The key strings are created before the first measurement (they are the caller's), so what is counted is what the limiter adds: its map entries, state, copies of keys and timers.`,
      '',
      memoryTable(heap.result),
      '',
    );
  }
  for (const [name, s] of [
    ['Redis decisions per second', redisSection],
    ['HTTP throughput and latency', httpSection],
  ] as const) {
    md.push(`## ${name}`, '');
    if (s.status === 'measured') md.push(s.result.markdown, '');
    else md.push(`_Not measured: ${s.reason}._`, '');
  }
  const configs = [
    subject('floor'),
    ...Object.keys(ALGORITHMS).map((n) => subject(`sluice:${n}`)),
    subject('sluice-await-now:token-bucket'),
    ...PEERS,
    ...RETURNING,
  ];
  md.push(
    '## Exact configuration of each subject',
    '',
    configList(configs),
    `- **memory table only**: ${Object.values(ALGORITHMS)
      .filter((a) => a.memoryConfig !== undefined)
      .map((a) => `\`${a.memoryConfig}\``)
      .join(', ')} (one live entry per key)`,
    '',
  );
  if (redisSection.status === 'measured') md.push(redisSection.result.configs, '');
  if (httpSection.status === 'measured') md.push(httpSection.result.configs, '');

  const loadLine = `Load: \`${before}\` before, \`${after}\` after (the bench itself keeps both cores busy).${cores === undefined ? ' Not pinned.' : ` Pinned: generator and in-process subjects on core ${cores.generator}, servers under test on core ${cores.subject}.`}`;
  const readme = readmeBlock(m, quick, checks, throughput, heap, redisSection, httpSection, loadLine);
  await mkdir(RESULTS, { recursive: true });
  const chartList = charts(throughput, httpSection, redisSection);
  const json = {
    mode: quick ? 'quick' : 'full',
    machine: m,
    staleBuilds: stale,
    targets: checks,
    inProcess: throughput,
    memory: heap,
    redis: redisSection,
    http: httpSection,
  };
  const outputs: [string, string][] = [
    ['latest.md', md.join('\n')],
    ['latest.json', `${JSON.stringify(json, null, 2)}\n`],
    ['readme.md', readme],
  ];
  if (chartList.length > 0) outputs.push(['ratios.svg', barCharts(chartList)]);
  // Quick runs (CI) write beside the full results, never over them.
  for (const [file, text] of outputs) await writeFile(RESULTS + (quick ? `quick-${file}` : file), text);
  log(`\nwrote ${outputs.map(([f]) => (quick ? `quick-${f}` : f)).join(', ')} in bench/results/`);
  process.stdout.write(`${md.join('\n')}\n`);
}

await main();

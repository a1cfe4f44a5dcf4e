/**
 * Where the bench's processes run, and whether the machine is quiet enough to measure. On two
 * shared cores a server and its load generator fight for the same core and the ratios of one run
 * moved ±30% between rounds; pinned apart (taskset), they do not. The bench process is the load
 * generator (autocannon, the Redis clients) and the in-process subject: it runs on the generator
 * core alone. What it measures from outside (the HTTP server under test, redis-server when the
 * Redis client is what is measured) runs on the subject core.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';

export interface Cores {
  /** The bench process: load generator, Redis clients, in-process subjects. */
  readonly generator: string;
  /** A process measured from outside: the HTTP server, redis-server in the Redis section. */
  readonly subject: string;
}

/**
 * The cores to pin to, or undefined (no taskset, a single core, or `SLUICE_BENCH_PIN=off`).
 * `SLUICE_BENCH_CORES=generator,subject` chooses them (default `0,1`).
 */
export function benchCores(): Cores | undefined {
  if (process.env.SLUICE_BENCH_PIN === 'off') return undefined;
  if (availableParallelism() < 2 || spawnSync('taskset', ['-V']).status !== 0) return undefined;
  const [generator = '0', subject = '1'] = (process.env.SLUICE_BENCH_CORES ?? '0,1').split(',');
  return { generator, subject };
}

/** Pins every thread of `pid` to `cpus` (taskset -a -p). */
export function pin(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

/** `uptime`'s line: printed before and after every run, beside the figures. */
export function uptime(): string {
  try {
    return execFileSync('uptime', { encoding: 'utf8' }).trim();
  } catch {
    return `load average: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(', ')}`;
  }
}

/** The machine's CPU ticks so far, all and stolen (Linux /proc/stat); undefined elsewhere. */
export function cpuTicks(): { all: number; steal: number } | undefined {
  try {
    const fields = readFileSync('/proc/stat', 'utf8')
      .split('\n')[0]!
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    // user nice system idle iowait irq softirq steal (guest time is inside user already)
    return { all: fields.slice(0, 8).reduce((a, b) => a + b, 0), steal: fields[7] ?? 0 };
  } catch {
    return undefined;
  }
}

/**
 * The share of the machine's time the hypervisor gave to other tenants between two `cpuTicks`:
 * a VM's cores can run at half speed for minutes while the load average reads quiet, and every
 * absolute figure of such a run moves with it.
 */
export function stealShare(before: ReturnType<typeof cpuTicks>, after: ReturnType<typeof cpuTicks>): string {
  if (before === undefined || after === undefined || after.all === before.all) return 'unknown';
  return `${((100 * (after.steal - before.steal)) / (after.all - before.all)).toFixed(1)}%`;
}

/** The 1-minute load average above which a run is not evidence. */
export const QUIET_LOAD = 1;

/** The 1-minute load average, and whether a run may start on it. */
export function quietEnough(): { load: number; quiet: boolean } {
  const load = loadavg()[0] ?? 0;
  return { load, quiet: load < QUIET_LOAD };
}

import { runChild } from '../lib/child.js';
import { median, spread } from '../lib/stats.js';
import type { GroupResult } from './child.js';
import { ALGORITHMS, PEERS, subject } from './subjects.js';

export interface ThroughputSettings {
  readonly roundMs: number;
  readonly rounds: number;
  readonly warmupMs: number;
}

export interface ThroughputRow {
  readonly id: string;
  readonly label: string;
  readonly config: string;
  /** Per scenario: median ops/s, ratio to the floor of the same process, spread of the rounds. */
  readonly scenarios: Record<string, { opsPerSecond: number; ratioToFloor: number; spread: number }>;
  /** For sluice rows: ratio to rate-limiter-flexible measured in the same process. */
  readonly ratioToRateLimiterFlexible?: Record<string, number>;
  readonly refused: number;
}

/**
 * One child process per sluice algorithm, each measuring that algorithm (through the limiter, and
 * raw for diagnosis) side by side with the floor and every peer. One algorithm per process is how
 * an application with one limiter runs: a single process cycling through six algorithms would make
 * the limiter's call sites megamorphic and slow sluice down for a reason no user has. The floor and
 * the peers are therefore measured once per group; their row reports the median over the groups.
 */
export async function inProcess(settings: ThroughputSettings, log: (line: string) => void) {
  const groups: { algorithm: string; result: GroupResult }[] = [];
  for (const name of Object.keys(ALGORITHMS)) {
    const ids = ['floor', `sluice:${name}`, `raw:${name}`, ...PEERS.map((p) => p.id)];
    if (name === 'token-bucket') ids.push('sluice-await:token-bucket', 'floor-decision');
    log(`  group ${name}: ${ids.join(', ')}`);
    const result = await runChild<GroupResult>('in-process/child.ts', [
      String(settings.roundMs),
      String(settings.rounds),
      String(settings.warmupMs),
      ids.join(','),
    ]);
    groups.push({ algorithm: name, result });
  }

  const scenarios = Object.keys(groups[0]!.result);
  const rows: ThroughputRow[] = [];
  const rowFor = (id: string, inGroups: typeof groups): ThroughputRow => {
    const s = subject(id);
    let refused = 0;
    const perScenario: ThroughputRow['scenarios'] = {};
    const vsRlf: Record<string, number> = {};
    for (const scenario of scenarios) {
      const medians: number[] = [];
      const ratios: number[] = [];
      const rlfRatios: number[] = [];
      const spreads: number[] = [];
      for (const g of inGroups) {
        const data = g.result[scenario]!;
        const mine = data[id]!;
        refused += mine.refused;
        const m = median(mine.rounds);
        medians.push(m);
        spreads.push(spread(mine.rounds));
        ratios.push(m / median(data.floor!.rounds));
        rlfRatios.push(m / median(data['rate-limiter-flexible']!.rounds));
      }
      perScenario[scenario] = {
        opsPerSecond: median(medians),
        ratioToFloor: median(ratios),
        spread: median(spreads),
      };
      vsRlf[scenario] = median(rlfRatios);
    }
    return {
      id,
      label: s.label,
      config: s.config,
      scenarios: perScenario,
      ...(id.startsWith('sluice') ? { ratioToRateLimiterFlexible: vsRlf } : {}),
      refused,
    };
  };
  rows.push(rowFor('floor', groups));
  for (const g of groups) {
    for (const id of Object.keys(g.result[scenarios[0]!]!)) {
      if (id.startsWith('sluice') || id.startsWith('raw') || id === 'floor-decision')
        rows.push(rowFor(id, [g]));
    }
  }
  for (const peer of PEERS) rows.push(rowFor(peer.id, groups));
  return { settings, scenarios, rows };
}

export type InProcessResult = Awaited<ReturnType<typeof inProcess>>;

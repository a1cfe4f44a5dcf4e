import { runChild } from '../lib/child.js';
import { median, spread } from '../lib/stats.js';
import type { GroupResult } from './child.js';
import { CLIENTS, RETURNING, type ReturningResult } from './returning.js';
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
  /**
   * For sluice rows: peer id → scenario → this row ÷ that peer, measured in the same process, for
   * the peers called the same way (awaited rows against the awaited peers, the others against the
   * synchronous ones).
   */
  readonly versus?: Record<string, Record<string, number>>;
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
    const ids = ['floor', `sluice:${name}`, `sluice-await:${name}`, `raw:${name}`, ...PEERS.map((p) => p.id)];
    // What the per-call `{ now }` costs (validated on every call), and what a decision object costs the floor.
    if (name === 'token-bucket')
      ids.push(
        'sluice-now:token-bucket',
        'sluice-await-now:token-bucket',
        'floor-decision',
        'floor-decision-await',
        'floor-decision-async',
      );
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
    const peers = PEERS.filter((p) => p.async === s.async);
    const versus: Record<string, Record<string, number>> = Object.fromEntries(peers.map((p) => [p.id, {}]));
    for (const scenario of scenarios) {
      const medians: number[] = [];
      const ratios: number[] = [];
      const spreads: number[] = [];
      const peerRatios = new Map<string, number[]>(peers.map((p) => [p.id, []]));
      for (const g of inGroups) {
        const data = g.result[scenario]!;
        const mine = data[id]!;
        refused += mine.refused;
        const m = median(mine.rounds);
        medians.push(m);
        spreads.push(spread(mine.rounds));
        ratios.push(m / median(data.floor!.rounds));
        for (const p of peers) peerRatios.get(p.id)!.push(m / median(data[p.id]!.rounds));
      }
      perScenario[scenario] = {
        opsPerSecond: median(medians),
        ratioToFloor: median(ratios),
        spread: median(spreads),
      };
      for (const p of peers) versus[p.id]![scenario] = median(peerRatios.get(p.id)!);
    }
    return {
      id,
      label: s.label,
      config: s.config,
      scenarios: perScenario,
      // The awaited decision floor too: how close to a peer any synchronous API awaited can come.
      ...(id.startsWith('sluice') || id === 'floor-decision-await' || id === 'floor-decision-async'
        ? { versus }
        : {}),
      refused,
    };
  };
  rows.push(rowFor('floor', groups));
  for (const g of groups) {
    for (const id of Object.keys(g.result[scenarios[0]!]!)) {
      if (id.startsWith('sluice') || id.startsWith('raw') || id.startsWith('floor-decision'))
        rows.push(rowFor(id, [g]));
    }
  }
  for (const peer of PEERS) rows.push(rowFor(peer.id, groups));
  return { settings, scenarios, rows, returning: await returning(settings, log) };
}

export interface ReturningRow {
  readonly id: string;
  readonly label: string;
  readonly config: string;
  readonly opsPerSecond: number;
  /** Median ops/s ÷ that of the same limiter on the same traffic with its state kept. */
  readonly ratioToKept: number;
  readonly spread: number;
  readonly refused: number;
  /** Decisions of one pass over every client that found no state (took the insert path). */
  readonly inserts?: number;
}

/** Returning clients under their limit (`returning.ts`), in their own process. */
async function returning(settings: ThroughputSettings, log: (line: string) => void) {
  log(`  returning clients: ${RETURNING.map((s) => s.id).join(', ')}`);
  const result = await runChild<ReturningResult>('in-process/returning.ts', [
    String(settings.roundMs),
    String(settings.rounds),
    String(settings.warmupMs),
  ]);
  const kept = median(result['returning:sluice-kept']!.rounds);
  const rows: ReturningRow[] = RETURNING.map((s) => {
    const r = result[s.id]!;
    const ops = median(r.rounds);
    return {
      id: s.id,
      label: s.label,
      config: s.config,
      opsPerSecond: ops,
      ratioToKept: ops / kept,
      spread: spread(r.rounds),
      refused: r.refused,
      ...(r.inserts === undefined ? {} : { inserts: r.inserts }),
    };
  });
  return { clients: CLIENTS, rows };
}

export type InProcessResult = Awaited<ReturnType<typeof inProcess>>;

import type { InProcessResult } from '../in-process/section.js';
import type { Machine } from '../lib/machine.js';
import { formatRate, formatRatio } from '../lib/stats.js';
import type { MemoryResult } from '../memory/section.js';

/** A section's outcome: measured, or not available yet (never fake rows). */
export type Section<T> =
  | { readonly status: 'measured'; readonly result: T }
  | { readonly status: 'skipped'; readonly reason: string };

const table = (header: readonly string[], rows: readonly (readonly string[])[]) =>
  [
    `| ${header.join(' | ')} |`,
    `|${header.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');

const SCENARIO_TITLES: Record<string, string> = { hot: 'hot key', '10k': '10,000 keys' };

export function machineLine(m: Machine): string {
  return `${m.date.slice(0, 10)} · ${m.cpu} · ${m.cores} cores · ${m.memoryGiB} GiB · Node ${m.node} · ${m.platform}`;
}

export function inProcessTable(r: InProcessResult): string {
  const header = ['subject'];
  for (const s of r.scenarios) header.push(`${SCENARIO_TITLES[s] ?? s} per CPU-s`, '× floor');
  header.push(
    `sluice ÷ peer called the same way (${r.scenarios.map((s) => SCENARIO_TITLES[s] ?? s).join(' / ')})`,
  );
  const rows = r.rows.map((row) => {
    const cells = [row.id === 'floor' || !row.id.includes(':') ? row.label : `**${row.label}**`];
    for (const s of r.scenarios) {
      const x = row.scenarios[s]!;
      cells.push(formatRate(x.opsPerSecond), formatRatio(x.ratioToFloor));
    }
    cells.push(
      Object.entries(row.versus ?? {})
        .map(([peer, by]) => `${peer} ${r.scenarios.map((s) => formatRatio(by[s]!)).join(' / ')}`)
        .join('; '),
    );
    return cells;
  });
  return table(header, rows);
}

export function returningTable(r: InProcessResult['returning']): string {
  return table(
    [
      'subject',
      'decisions per CPU-s',
      '÷ state kept',
      `decisions of one pass over ${r.clients.toLocaleString('en')} clients that found no state`,
    ],
    r.rows.map((row) => [
      row.label,
      formatRate(row.opsPerSecond),
      formatRatio(row.ratioToKept),
      row.inserts === undefined ? '' : `${row.inserts.toLocaleString('en')}`,
    ]),
  );
}

export function memoryTable(r: MemoryResult): string {
  return table(
    ['subject', 'heap bytes per key'],
    r.rows.map((row) => [row.label, row.bytesPerKey.toFixed(0)]),
  );
}

export interface Verdict {
  readonly target: string;
  readonly met: boolean | undefined;
  readonly figure: string;
}

export function verdictTable(verdicts: readonly Verdict[]): string {
  return table(
    ['target', 'met', 'measured'],
    verdicts.map((v) => [v.target, v.met === undefined ? 'n/a' : v.met ? 'yes' : '**no**', v.figure]),
  );
}

export function configList(configs: readonly { label: string; config: string }[]): string {
  return configs.map((c) => `- **${c.label}**: \`${c.config}\``).join('\n');
}

export { formatRate, formatRatio, table };

import { ALGORITHMS, PEERS, subject } from '../in-process/subjects.js';
import { runChild } from '../lib/child.js';

export interface MemoryRow {
  readonly id: string;
  readonly label: string;
  readonly config: string;
  readonly bytesPerKey: number;
  readonly refused: number;
}

/** Each subject in its own fresh process with --expose-gc, one after the other. */
export async function memory(keys: number, log: (line: string) => void) {
  const ids = ['floor', ...Object.keys(ALGORITHMS).map((n) => `sluice:${n}`), ...PEERS.map((p) => p.id)];
  const rows: MemoryRow[] = [];
  for (const id of ids) {
    const s = subject(id, true);
    const result = await runChild<{ bytesPerKey: number; refused: number }>(
      'memory/child.ts',
      [id, String(keys)],
      ['--expose-gc', '--max-old-space-size=4096'],
    );
    log(`  ${s.label}: ${result.bytesPerKey.toFixed(1)} bytes/key`);
    rows.push({
      id,
      label: s.label,
      config: s.config,
      bytesPerKey: result.bytesPerKey,
      refused: result.refused,
    });
  }
  return { keys, rows };
}

export type MemoryResult = Awaited<ReturnType<typeof memory>>;

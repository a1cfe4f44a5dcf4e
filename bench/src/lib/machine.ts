import { statSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Machine {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly node: string;
  readonly platform: string;
  readonly date: string;
  readonly note: string;
}

export function machine(): Machine {
  const list = cpus();
  return {
    cpu: list[0]?.model.trim() ?? 'unknown',
    cores: list.length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    date: new Date().toISOString(),
    note: 'A shared 2-core VM: absolute figures are noisy and machine-specific; compare the ratios, measured side by side in one run.',
  };
}

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * The bench runs against the BUILT packages (`packages/<name>/dist`), as users run them. Returns
 * the packages whose sources are newer than their build, so the report can say the build is stale.
 */
export async function staleBuilds(names: readonly string[]): Promise<string[]> {
  const stale: string[] = [];
  for (const name of names) {
    const dist = join(ROOT, 'packages', name, 'dist', 'index.js');
    let built: number;
    try {
      built = statSync(dist).mtimeMs;
    } catch {
      stale.push(`${name} (not built)`);
      continue;
    }
    const src = join(ROOT, 'packages', name, 'src');
    const files = await readdir(src, { recursive: true });
    if (files.some((f) => f.endsWith('.ts') && statSync(join(src, f)).mtimeMs > built)) stale.push(name);
  }
  return stale;
}

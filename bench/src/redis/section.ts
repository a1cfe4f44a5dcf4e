import type { Section } from '../report/markdown.js';
import type { Chart } from '../report/svg.js';

export interface RedisResult {
  readonly markdown: string;
  readonly configs: string;
  readonly charts: readonly Chart[];
}

export async function redis(
  _settings: { ms: number; rounds: number },
  _log: (line: string) => void,
): Promise<Section<RedisResult>> {
  return { status: 'skipped', reason: 'TODO: not yet available' };
}

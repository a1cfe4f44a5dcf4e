import type { Section } from '../report/markdown.js';
import type { Chart } from '../report/svg.js';

export interface HttpResult {
  readonly markdown: string;
  readonly configs: string;
  readonly charts: readonly Chart[];
}

export async function http(
  _settings: { seconds: number; rounds: number },
  _log: (line: string) => void,
): Promise<Section<HttpResult>> {
  return { status: 'skipped', reason: 'TODO: not yet available' };
}

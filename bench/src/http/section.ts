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
  return {
    status: 'skipped',
    reason:
      'not yet available (TODO: autocannon against Fastify and Express, bare / + @fastify/rate-limit or express-rate-limit / + sluice, in a separate server process)',
  };
}

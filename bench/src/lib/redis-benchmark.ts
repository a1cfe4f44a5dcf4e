/**
 * The figures of `redis-benchmark --csv`'s last line (one command's test): requests per second,
 * and its p50 and p99 latency in ms.
 */
export function redisBenchmarkFigures(csv: string): { rps: number; p50: number; p99: number } {
  const row = csv
    .trim()
    .split('\n')
    .at(-1)!
    .split('","')
    .map((f) => f.replaceAll('"', ''));
  return { rps: Number(row[1]), p50: Number(row[4]), p99: Number(row[6]) };
}

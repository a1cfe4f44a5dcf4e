import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type Decision, gcra, Limiter, MemoryStore, tokenBucket } from '@sluice/core';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIR = join(ROOT, 'test/.tmp/simulate');
const run = promisify(execFile);

/** `pnpm simulate …` as the root script runs it (tsx, from the repository's root). */
async function simulate(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ['--import', 'tsx', 'packages/playground/src/cli.ts', ...args],
      { cwd: ROOT },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function file(name: string, text: string): string {
  mkdirSync(DIR, { recursive: true });
  const path = join(DIR, name);
  writeFileSync(path, text);
  return path;
}

describe('pnpm simulate', () => {
  it('prints the counts @sluice/core gives for a CSV trace and writes the SVG chart', async () => {
    const rows: [number, string, number][] = [];
    for (let i = 0; i < 400; i++)
      rows.push([i * 7, i % 3 === 0 ? 'bob' : 'alice', 1 + (i % 4 === 0 ? 2 : 0)]);
    const trace = file('t.csv', `time,key,cost\n${rows.map((r) => r.join(',')).join('\n')}\n`);
    const config = file(
      'limits.json',
      JSON.stringify({
        limits: [
          { algorithm: 'tokenBucket', capacity: 20, refillInterval: '1s' },
          { algorithm: 'gcra', name: 'smooth', rate: 30, period: '1s', burst: 5 },
        ],
      }),
    );
    const out = join(DIR, 'chart.svg');
    const { code, stdout } = await simulate('--config', config, '--trace', trace, '--out', out);
    expect(code).toBe(0);
    const algorithms = [
      ['tokenBucket', tokenBucket({ capacity: 20, refillInterval: '1s' })],
      ['smooth', gcra({ rate: 30, period: '1s', burst: 5 })],
    ] as const;
    const svg = readFileSync(out, 'utf8');
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    for (const [name, algorithm] of algorithms) {
      const limiter = new Limiter({ limits: [{ name, algorithm }], store: new MemoryStore() });
      let admitted = 0;
      for (const [now, key, cost] of rows)
        if ((limiter.checkSync(key, { now, cost }) as Decision).allowed) admitted++;
      expect(admitted).toBeGreaterThan(0);
      expect(admitted).toBeLessThan(rows.length);
      const line = stdout.split('\n').find((l) => l.startsWith(`${name} `));
      expect(line, stdout).toMatch(new RegExp(`^${name}\\s+${admitted} / 400\\s+${400 - admitted}\\s`));
      expect(svg).toContain(`>${name}</tspan>`);
      expect(svg).toContain(`admitted ${admitted} of 400, refused ${400 - admitted}`);
    }
  });

  it("writes the chooser chart of docs/algorithms.md as committed (docs/chooser.svg is this command's output)", async () => {
    const out = join(DIR, 'chooser.svg');
    // The command quoted in docs/algorithms.md under "Choosing an algorithm".
    const { code } = await simulate(
      '--config',
      'docs/playground/chooser.json',
      '--out',
      out,
      '--buckets',
      '100',
      '--title',
      'Four limits of 10 per second on one trace',
    );
    expect(code).toBe(0);
    expect(readFileSync(out, 'utf8')).toBe(readFileSync(join(ROOT, 'docs/chooser.svg'), 'utf8'));
  });

  it("fails with core's error code for a bad limit, and with the line for a bad CSV row", async () => {
    const config = file('bad.json', JSON.stringify({ limits: [{ algorithm: 'tokenBukcet', capacity: 1 }] }));
    const trace = file('ok.csv', '0,a,1\n');
    const bad = await simulate('--config', config, '--trace', trace, '--out', join(DIR, 'bad.svg'));
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('ERR_SLUICE_UNKNOWN_ALGORITHM');
    expect(bad.stderr).toContain('tokenBukcet');

    const good = file(
      'good.json',
      JSON.stringify({ limits: [{ algorithm: 'fixedWindow', limit: 1, window: '1s' }] }),
    );
    const row = file('bad.csv', 'time,key,cost\n0,a,1\n5,a,0\n');
    const csv = await simulate('--config', good, '--trace', row, '--out', join(DIR, 'bad.svg'));
    expect(csv.code).toBe(1);
    expect(csv.stderr).toContain('line 3: cost must be an integer ≥ 1; got "0"');
  });
});

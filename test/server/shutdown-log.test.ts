import { rm } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServerProcess, spawnServer, tempDir } from './harness.js';

/** SIGTERM, then wait for stderr to close too: its last lines may arrive after the process's exit. */
async function stopAndDrain(server: ServerProcess): Promise<void> {
  const closed = new Promise<void>((resolve) => server.child.once('close', () => resolve()));
  await server.kill('SIGTERM');
  await closed;
}

/**
 * The README says the server's events (listening, ..., workers started and stopped) are JSON lines
 * on stderr: a clean SIGTERM must say it stopped, with one process and with workers.
 */
describe('sluice-server logs a clean stop', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('one process: SIGTERM logs stopped after listening, and the process exits 0', async () => {
    const dir = await tempDir();
    dirs.push(dir);
    const server = await spawnServer(dir);
    await stopAndDrain(server);
    expect([server.child.exitCode, server.child.signalCode]).toEqual([0, null]);
    const events = server.events().map((e) => e.event);
    expect(events).toEqual(['listening', 'stopped']);
    expect(server.events()[1]?.fields).toMatchObject({ port: server.port, dataDir: dir });
  });

  it('--workers 2: each worker logs worker-stopped, then the primary logs stopped, last', async () => {
    const dir = await tempDir();
    dirs.push(dir);
    const server = await spawnServer(dir, undefined, ['--workers', '2']);
    await stopAndDrain(server);
    expect([server.child.exitCode, server.child.signalCode]).toEqual([0, null]);
    const events = server.events();
    const stoppedWorkers = events.filter((e) => e.event === 'worker-stopped').map((e) => e.fields.worker);
    expect(stoppedWorkers.sort()).toEqual([0, 1]);
    expect(events.at(-1)).toEqual({
      event: 'stopped',
      fields: expect.objectContaining({ workers: 2, code: 0 }),
    });
  });
});

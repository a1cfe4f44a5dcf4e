import { rm } from 'node:fs/promises';
import { status } from '@grpc/grpc-js';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, type RedisProcess, startRedis } from '../setup/redis-server.js';
import { spawnServer, tempDir, until } from './harness.js';
import { configDir, d, publishedClient } from './rls-harness.js';

// `sluice-server --grpc-port N --rls-config DIR`: the gRPC port beside the RESP port, in a real
// process, and its clean stop on SIGTERM (the gRPC side first, then LMDB).

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/**
 * A free port below Linux's ephemeral range (32768–60999). The server's client reconnects to it
 * while nothing listens, and a connect to a free port inside that range can take the port itself
 * (a TCP self-connect) or another socket can be given it, so Redis could not bind it afterwards
 * (seen once in a full run: "Address already in use").
 */
async function portBelowEphemeral(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port < 32_768) return port;
  }
}

describe('sluice-server --grpc-port', () => {
  it('serves ShouldRateLimit from the YAML directory on LMDB and stops cleanly on SIGTERM', async () => {
    const data = await tempDir();
    const config = await configDir({
      'app.yaml':
        'domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: year, requests_per_unit: 2 }\n',
    });
    dirs.push(data, config);
    const grpcPort = await freePort();
    const server = await spawnServer(data, undefined, [
      '--grpc-port',
      String(grpcPort),
      '--rls-config',
      config,
    ]);
    try {
      await until(() => server.events().some((e) => e.event === 'rls-listening'), 'rls-listening');
      const client = publishedClient(grpcPort);
      const codes: string[] = [];
      for (let i = 0; i < 3; i++) codes.push((await client.should('app', [d('user', 'u')])).overall_code);
      expect(codes).toEqual(['OK', 'OK', 'OVER_LIMIT']);
      client.close();
    } finally {
      await server.kill('SIGTERM');
    }
    expect(server.child.exitCode).toBe(0);
    const events = server.events().map((e) => e.event);
    expect(events.indexOf('rls-stopped')).toBeGreaterThan(-1);
    expect(events.indexOf('rls-stopped')).toBeLessThan(events.indexOf('stopped'));
    // A real process started and stopped: bounded for a loaded machine, not by the default 20 s.
  }, 90_000);

  it('--rls-redis with Redis away: the call is UNAVAILABLE, the store says why in the JSON log, and Redis never counts it when it comes back', async () => {
    const data = await tempDir();
    const config = await configDir({
      'app.yaml':
        'domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: year, requests_per_unit: 2 }\n',
    });
    dirs.push(data, config);
    const grpcPort = await freePort();
    // Nothing listens there yet.
    const redisPort = await portBelowEphemeral();
    const server = await spawnServer(data, undefined, [
      '--grpc-port',
      String(grpcPort),
      '--rls-config',
      config,
      '--rls-redis',
      `redis://127.0.0.1:${redisPort}`,
    ]);
    let redis: RedisProcess | undefined;
    try {
      await until(() => server.events().some((e) => e.event === 'rls-listening'), 'rls-listening');
      const client = publishedClient(grpcPort);
      for (let i = 0; i < 3; i++) {
        await expect(client.should('app', [d('user', 'u')])).rejects.toMatchObject({
          code: status.UNAVAILABLE,
        });
      }
      await until(() => server.events().some((e) => e.event === 'rls-redis'), 'rls-redis');
      const line = server.events().find((e) => e.event === 'rls-redis')!;
      expect(String(line.fields.message)).toMatch(/^\[sluice\] RedisStore: Redis failed/);
      // Redis comes back: an answer of UNAVAILABLE was not a hit, now or later (a client queueing
      // commands while offline would send the three above once connected: the limit of 2 spent).
      redis = await startRedis({ port: redisPort });
      const deadline = Date.now() + 30_000;
      for (;;) {
        try {
          await client.should('app', [d('user', 'probe')]);
          break;
        } catch (error) {
          if (Date.now() > deadline) throw error;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      const codes: string[] = [];
      for (let i = 0; i < 3; i++) codes.push((await client.should('app', [d('user', 'u')])).overall_code);
      expect(codes).toEqual(['OK', 'OK', 'OVER_LIMIT']);
      client.close();
      // Every line the server wrote is a JSON event (ioredis' own "Unhandled error event" was not).
      expect(server.otherLines()).toEqual([]);
    } finally {
      await server.kill('SIGTERM');
      await redis?.stop();
    }
  }, 90_000);
});

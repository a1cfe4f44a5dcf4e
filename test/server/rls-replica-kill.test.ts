import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../setup/redis-server.js';
import { type ServerProcess, spawnServer, tempDir, until } from './harness.js';
import { configDir, d, ownClient, publishedClient } from './rls-harness.js';

// Two `sluice-server --rls-redis` replicas on one Redis; one is SIGKILLed mid-load. Every hit it
// acknowledged before dying is in Redis: the survivor's count holds at least every OK any client
// received (a hit applied but never acknowledged may count too: the client saw the call fail).

const dirs: string[] = [];
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const s of servers) await s.kill('SIGKILL');
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('a replica SIGKILLed mid-load', () => {
  it('loses no acknowledged hit', async () => {
    const domain = `kill-${randomUUID().slice(0, 8)}`;
    const config = await configDir({
      'app.yaml': `domain: ${domain}\ndescriptors:\n  - key: k\n    rate_limit: { unit: year, requests_per_unit: 1000 }\n`,
    });
    dirs.push(config);
    const redis = `redis://127.0.0.1:${inject('redisPort')}`;
    const replicas: { server: ServerProcess; grpc: number }[] = [];
    for (let i = 0; i < 2; i++) {
      const data = await tempDir();
      dirs.push(data);
      const grpc = await freePort();
      const server = await spawnServer(data, undefined, [
        '--grpc-port',
        String(grpc),
        '--rls-config',
        config,
        '--rls-redis',
        redis,
        // A loaded machine must not read as a Redis outage (the calls would fail, not count).
        '--rls-redis-timeout',
        '10000',
      ]);
      servers.push(server);
      await until(() => server.events().some((e) => e.event === 'rls-listening'), 'rls-listening');
      replicas.push({ server, grpc });
    }
    const [a, b] = replicas.map((r) => publishedClient(r.grpc));
    let acknowledged = 0;
    let answeredByA = 0;
    let killed: Promise<void> | undefined;
    const calls = Array.from({ length: 600 }, (_, i) => {
      const onA = i % 2 === 0;
      return (onA ? a! : b!).should(domain, [d('k', 'shared')]).then(
        (r) => {
          if (r.overall_code === 'OK') acknowledged++;
          if (onA && ++answeredByA === 60) killed = replicas[0]!.server.kill('SIGKILL');
        },
        () => {},
      );
    });
    await Promise.all(calls);
    await killed;
    expect(answeredByA).toBeGreaterThanOrEqual(60);
    expect(acknowledged).toBeGreaterThan(300); // B's 300 at least, and A's before the kill
    const look = ownClient(replicas[1]!.grpc);
    const r = await look.should(domain, [{ ...d('k', 'shared'), hits_addend: { value: 0 } }]);
    const counted = 1000 - r.statuses[0]!.limit_remaining;
    expect(counted).toBeGreaterThanOrEqual(acknowledged);
    expect(counted).toBeLessThanOrEqual(600);
    for (const c of [a!, b!, look]) c.close();
    // Two server processes started, 600 calls and a kill: a loaded machine takes longer than the
    // default 20 s, and the verdict must not depend on how busy it is.
  }, 120_000);
});

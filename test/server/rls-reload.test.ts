import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { ClientReadableStream, ServiceError } from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { MemoryStore } from '@sluice/core';
import { StoreBackend } from '@sluice/server';
import { afterEach, describe, expect, it } from 'vitest';
import type { LoggedEvent } from './harness.js';
import { d, healthClient, type RlsSubject, startRls } from './rls-harness.js';

const limitOf = (n: number) => `
domain: app
descriptors:
  - key: user
    rate_limit:
      unit: minute
      requests_per_unit: ${n}
`;

let s: RlsSubject | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

/** Resolves with the next event named `name` logged from now on (the watcher's reload, not a timer). */
function nextEvent(events: LoggedEvent[], name: string): Promise<LoggedEvent> {
  const seen = events.length;
  return new Promise((resolve) => {
    const poll = () => {
      const found = events.slice(seen).find((e) => e.event === name);
      if (found !== undefined) resolve(found);
      else setImmediate(poll);
    };
    poll();
  });
}

describe('reload', () => {
  it('a changed file is picked up by the watcher; a bad one is refused with file and line, the last good config serves', async () => {
    s = await startRls({ 'app.yaml': limitOf(5) }, { watch: true, reloadDelay: 20 });
    const c = s.client();
    expect((await c.should('app', [d('user', 'u')])).statuses[0]!.current_limit!.requests_per_unit).toBe(5);

    const reloaded = nextEvent(s.events, 'config-reloaded');
    await s.write('app.yaml', limitOf(7));
    await reloaded;
    expect((await c.should('app', [d('user', 'u')])).statuses[0]!.current_limit!.requests_per_unit).toBe(7);

    const refused = nextEvent(s.events, 'config-refused');
    await s.write('app.yaml', `${limitOf(9)}      unit_typo: 3\n`);
    const event = await refused;
    expect(event.fields.error).toBe(
      `${join(s.dir, 'app.yaml')}:8: unknown key 'unit_typo'; accepted here: unit, requests_per_unit, unlimited, name, replaces, algorithm, duration, burst`,
    );
    expect((await c.should('app', [d('user', 'u')])).statuses[0]!.current_limit!.requests_per_unit).toBe(7);

    const good = nextEvent(s.events, 'config-reloaded');
    await s.write('app.yaml', limitOf(7));
    await good;
    const syntax = nextEvent(s.events, 'config-refused');
    await s.write('second.yaml', 'domain: second\ndescriptors:\n  - key: [unclosed\n');
    expect((await syntax).fields.error).toMatch(/second\.yaml:\d+: error loading config file/);
    await rm(join(s.dir, 'second.yaml'));
  });

  it('a domain in two files is refused; a file removed drops its domain', async () => {
    s = await startRls({ 'app.yaml': limitOf(5), 'other.yaml': 'domain: other\ndescriptors: []\n' });
    await s.write('dup.yaml', limitOf(3));
    expect(s.rls.reload()).toBe(false);
    expect(s.events.at(-1)!.fields.error).toMatch(
      /dup\.yaml: duplicate domain 'app' in config file \(also in .*app\.yaml\)/,
    );
    await rm(join(s.dir, 'dup.yaml'));
    await rm(join(s.dir, 'app.yaml'));
    expect(s.rls.reload()).toBe(true);
    expect((await s.client().should('app', [d('user', 'u')])).statuses[0]!.current_limit).toBeNull();
  });

  it('reloads between requests drop none: every call in flight is answered, by the old or the new config', async () => {
    s = await startRls({ 'app.yaml': limitOf(100_000) });
    const c = s.client();
    const calls: Promise<unknown>[] = [];
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 25; i++) calls.push(c.should('app', [d('user', `r${i}`)]));
      await s.write('app.yaml', limitOf(100_000 + round));
      expect(s.rls.reload()).toBe(true);
    }
    const results = await Promise.allSettled(calls);
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
  });
});

describe('health and stop', () => {
  it('grpc.health.v1: SERVING while up, NOT_SERVING on close; an unknown service is NOT_FOUND; a call in flight is answered', async () => {
    // A backend that holds each decision until the test lets it go: a call truly in flight at close.
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    s = await startRls({ 'app.yaml': limitOf(5) }, {}, (clock) => {
      const inner = new StoreBackend(new MemoryStore(), clock);
      return {
        name: 'gated',
        async decide(calls, allOrNothing) {
          entered();
          await gate;
          return inner.decide(calls, allOrNothing);
        },
      };
    });
    const health = healthClient(s.port) as unknown as {
      Check(req: { service: string }, cb: (e: ServiceError | null, r: { status: string }) => void): void;
      Watch(req: { service: string }): ClientReadableStream<{ status: string }>;
      close(): void;
    };
    const check = (service: string) =>
      new Promise<{ status: string }>((resolve, reject) =>
        health.Check({ service }, (e, r) => (e === null ? resolve(r) : reject(e))),
      );
    expect(await check('')).toEqual({ status: 'SERVING' });
    expect(await check('envoy.service.ratelimit.v3.RateLimitService')).toEqual({ status: 'SERVING' });
    await expect(check('nope')).rejects.toMatchObject({ code: status.NOT_FOUND });

    const watch = health.Watch({ service: '' });
    const seen: string[] = [];
    const ended = new Promise<void>((resolve) => {
      watch.on('data', (m: { status: string }) => seen.push(m.status));
      watch.on('end', () => resolve());
      watch.on('error', () => resolve());
    });
    while (seen.length === 0) await new Promise((r) => setImmediate(r));
    const c = s.client();
    const inFlight = c.should('app', [d('user', 'last')]);
    await inside;
    const closing = s.rls.close();
    while (seen.length < 2) await new Promise((r) => setImmediate(r));
    release();
    expect((await inFlight).overall_code).toBe('OK');
    await closing;
    await ended;
    expect(seen).toEqual(['SERVING', 'NOT_SERVING']);
    expect(s.events.map((e) => e.event)).toContain('rls-stopped');
    health.close();
  });
});

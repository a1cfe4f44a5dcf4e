/**
 * Redis faults under steady traffic through the HTTP adapters (an Express and a Fastify app
 * process): Redis paused (SIGSTOP) then resumed, killed (SIGKILL) then restarted on its port, and a
 * Sentinel-managed primary killed and replaced by its replica. Each app serves one route per
 * failure policy (`allow`, `deny`, a fallback `MemoryStore`). Every request is answered, within
 * the store timeout while Redis is unavailable; no unhandled rejection, no crash; once Redis is
 * back, decisions are exact again without restarting the apps.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../setup/redis-server.js';
import { type SentinelSet, startSentinelSet } from '../setup/sentinel.js';
import type { AppConfig, BackendSpec, RouteSpec } from './app-config.js';
import {
  type AppProcess,
  figures,
  get,
  hammer,
  keepAlive,
  type PhaseFigures,
  type Sample,
  startApp,
  until,
  writeResults,
} from './helpers.js';

/**
 * The store timeout: 1 s, not the README's default 100 ms. At load 8 on 2 cores a healthy Redis
 * can take longer than 100 ms to answer, and the policy then answered requests the test counts as
 * Redis's (seen: 23 admitted by the fallback where the limit is 20, after recovery). The outages
 * last 3 s, so an answer within TIMEOUT + SLACK (2 s) still tells the timeout from a hang.
 */
const TIMEOUT = 1_000;
/** Slack on a loaded 2-core machine: two app processes, Redis, sentinels and the test share it. */
const SLACK = 1_000;
/** A request not answered within this is counted as unanswered (a hang): past TIMEOUT + SLACK. */
const BOUND = 3_000;
/** Exactness check once Redis is back. */
const LIMIT = 20;
const POLICIES = ['allow', 'deny', 'fallback'] as const;
type Policy = (typeof POLICIES)[number];
type Phase = 'before' | 'outage' | 'recovery';
/** A request sent in one phase and answered in the next is counted apart, in `transition`. */
type Bucket = Phase | 'transition';

function routes(): RouteSpec[] {
  return POLICIES.map((policy) => ({
    path: `/${policy}`,
    backend: 'main',
    failurePolicy: policy,
    timeout: TIMEOUT,
    breaker: { failures: 3, cooldown: 1_000 },
    limits: [
      {
        name: 'per-key',
        key: 'x-key',
        algorithm: { kind: 'fixed-window', options: { limit: LIMIT, window: '1d' } },
      },
    ],
  }));
}

/** Steady traffic: per app and policy, `WORKERS` loops of one request every ~`GAP` ms, each on a new key. */
const WORKERS = 2;
const GAP = 20;

/** Answers each policy has at least in the phases around a fault (the checks below need > 10). */
const MIN_REQUESTS = 11;

class Traffic {
  /** `'transition'` while a fault is being applied or lifted: Redis's state is then unknown. */
  phase: Bucket = 'before';
  readonly samples: { phase: Bucket; policy: Policy; sample: Sample }[] = [];
  private running = true;
  private readonly loops: Promise<void>[] = [];
  private readonly agent = keepAlive(WORKERS * POLICIES.length);

  constructor(ports: readonly number[]) {
    for (const port of ports) {
      for (const policy of POLICIES) {
        for (let w = 0; w < WORKERS; w++) this.loops.push(this.loop(port, policy));
      }
    }
  }

  private async loop(port: number, policy: Policy): Promise<void> {
    while (this.running) {
      const phase = this.phase;
      const sample = await get(
        port,
        `/${policy}`,
        { 'x-key': randomUUID() },
        { agent: this.agent, bound: BOUND },
      );
      // A request still in flight when the phase changed saw both Redis states (sent to a healthy
      // Redis that stopped before answering, say): it belongs to neither phase.
      this.samples.push({ phase: this.phase === phase ? phase : 'transition', policy, sample });
      await new Promise((resolve) => setTimeout(resolve, GAP));
    }
  }

  /**
   * Runs the traffic in `phase` for at least `ms` (real time: the fault lasts this long) and, with
   * `minimum`, until every policy has that many answers in the phase: on a loaded machine a
   * second held exactly 10 and the count's check failed (a verdict that depended on the load).
   */
  async run(phase: Phase, ms: number, minimum = 0): Promise<void> {
    this.phase = phase;
    await new Promise((resolve) => setTimeout(resolve, ms));
    for (let waited = 0; waited < 30_000; waited += 50) {
      if (POLICIES.every((policy) => this.of(phase, policy).length >= minimum)) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    this.agent.destroy();
  }

  of(phase: Bucket, policy: Policy): Sample[] {
    return this.samples.filter((s) => s.phase === phase && s.policy === policy).map((s) => s.sample);
  }
}

const results: Record<
  string,
  Record<Policy, Record<Bucket, PhaseFigures>> & { exact: Record<Policy, number> }
> = {};
afterAll(() =>
  writeResults('faults', {
    timeout: TIMEOUT,
    breaker: { failures: 3, cooldown: 1_000 },
    limit: LIMIT,
    results,
  }),
);

interface Fault {
  /** Makes Redis unavailable. */
  begin(): Promise<void> | void;
  /** ms the outage lasts at least (traffic keeps running meanwhile). */
  readonly lasts: number;
  /** Ends the fault (resume, restart); for a failover, waits until a new primary is elected. */
  end(): Promise<void> | void;
}

/** The whole scenario: two apps, steady traffic through before/outage/recovery, then the checks. */
async function scenario(name: string, backend: BackendSpec, fault: Fault): Promise<void> {
  // One prefix for both apps: they share the limits.
  const prefix = `rel:fault:${randomUUID().slice(0, 8)}:`;
  const config = (adapter: AppConfig['adapter']): AppConfig => ({
    adapter,
    prefix,
    backends: { main: backend },
    routes: routes(),
  });
  const apps: AppProcess[] = await Promise.all([startApp(config('express')), startApp(config('fastify'))]);
  const ports = apps.map((app) => app.port);
  const traffic = new Traffic(ports);
  try {
    await traffic.run('before', 1_000, MIN_REQUESTS);
    traffic.phase = 'transition';
    await fault.begin();
    await traffic.run('outage', fault.lasts);
    traffic.phase = 'transition';
    await fault.end();
    traffic.phase = 'recovery';
    // Recovered once every app's client is connected and every breaker has closed again.
    await until(
      'the apps to reconnect and close their breakers',
      async () => {
        const all = await Promise.all(apps.map((app) => app.stats()));
        return all.every(
          (s) =>
            s.clients.main === 'ready' &&
            POLICIES.every((p) => (s.breaker[`/${p}`] ?? 'closed') === 'closed'),
        );
      },
      20_000,
      100,
    );
    await traffic.run('recovery', 1_000, MIN_REQUESTS);
  } finally {
    await traffic.stop();
  }

  // Exact again, without restarting the apps: LIMIT + 10 requests on one key over both apps.
  const exact = {} as Record<Policy, number>;
  const agent = keepAlive(4);
  for (const policy of POLICIES) {
    const samples = await hammer(
      ports,
      `/${policy}`,
      { 'x-key': `exact-${randomUUID()}` },
      LIMIT + 10,
      4,
      agent,
    );
    exact[policy] = figures(samples).admitted;
  }
  agent.destroy();

  const stats = await Promise.all(apps.map((app) => app.stats()));
  const crashed = apps.map((app) => app.exit);
  await Promise.all(apps.map((app) => app.stop()));

  const byPolicy = {} as Record<Policy, Record<Bucket, PhaseFigures>>;
  for (const policy of POLICIES) {
    byPolicy[policy] = {
      before: figures(traffic.of('before', policy)),
      outage: figures(traffic.of('outage', policy)),
      recovery: figures(traffic.of('recovery', policy)),
      transition: figures(traffic.of('transition', policy)),
    };
  }
  results[name] = { ...byPolicy, exact };

  expect(crashed).toEqual([undefined, undefined]);
  for (const s of stats) {
    expect(s.unhandled).toEqual([]);
    expect(s.uncaught).toEqual([]);
  }
  for (const policy of POLICIES) {
    const phases = byPolicy[policy];
    for (const phase of ['before', 'outage', 'recovery'] as const) {
      // Every request answered: none hung.
      expect(phases[phase].requests, `${policy} ${phase}`).toBeGreaterThan(10);
      expect(phases[phase].answered, `${policy} ${phase}`).toBe(phases[phase].requests);
    }
    expect(phases.transition.answered, `${policy} transition`).toBe(phases.transition.requests);
    expect(phases.transition.max, `${policy} transition max`).toBeLessThan(TIMEOUT + SLACK);
    expect(phases.before.admitted, policy).toBe(phases.before.requests);
    // Unavailable: within the timeout, and most requests fast (the breaker is open).
    expect(phases.outage.max, `${policy} outage max`).toBeLessThan(TIMEOUT + SLACK);
    expect(phases.outage.p50, `${policy} outage p50`).toBeLessThan(TIMEOUT / 2);
    expect(exact[policy], `${policy}: exact after recovery`).toBe(LIMIT);
  }
  // The policies did what they say while Redis was gone.
  expect(byPolicy.allow.outage.admitted).toBe(byPolicy.allow.outage.requests);
  expect(byPolicy.fallback.outage.admitted).toBe(byPolicy.fallback.outage.requests);
  expect(byPolicy.deny.outage.admitted).toBe(0);
  expect(byPolicy.deny.outage.unavailable).toBe(byPolicy.deny.outage.requests);
}

describe('Redis faults under steady HTTP traffic', () => {
  let redis: RedisProcess | undefined;
  let sentinels: SentinelSet | undefined;
  afterAll(async () => {
    await redis?.stop();
    await sentinels?.stop();
  });

  it('paused (SIGSTOP) for 3 s, then resumed', async () => {
    redis = await startRedis();
    const server = redis;
    await scenario(
      'pause',
      { kind: 'redis', port: server.port },
      { begin: () => server.pause(), lasts: 3_000, end: () => server.resume() },
    );
    await server.stop();
    redis = undefined;
  }, 60_000);

  it('killed (SIGKILL), restarted on the same port 3 s later', async () => {
    redis = await startRedis();
    const server = redis;
    await scenario(
      'kill',
      { kind: 'redis', port: server.port },
      { begin: () => server.kill(), lasts: 3_000, end: () => server.restart() },
    );
    await server.stop();
    redis = undefined;
  }, 60_000);

  it('Sentinel: the primary killed (SIGKILL) and replaced by its replica', async () => {
    // The outage phase must hold several TIMEOUTs (the breaker opens after one, then answers are
    // fast) and must end before any promotion: the sentinels cannot start one until the primary
    // has been silent for downAfter. 500 ms of outage left a loaded machine with no request both
    // sent and answered inside it (CI, ioredis6).
    sentinels = await startSentinelSet({ downAfter: 3_000, failoverTimeout: 3_000 });
    const set = sentinels;
    await scenario(
      'sentinel',
      {
        kind: 'sentinel',
        sentinels: set.sentinelPorts.map((port) => ({ host: '127.0.0.1', port })),
        name: set.name,
      },
      {
        begin: () => set.primary.kill(),
        lasts: 2_500,
        end: () =>
          until(
            'the sentinels to promote the replica',
            async () => (await set.primaryPort()) === set.replica.port,
            30_000,
            100,
          ),
      },
    );
  }, 90_000);
});

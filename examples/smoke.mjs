// Smoke test for every example: start it on a free port, fire a burst, check statuses and headers,
// stop it. Exits non-zero on the first failure. Run from the repo root: node examples/smoke.mjs
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const children = [];

function fail(message) {
  console.error(`smoke: FAIL ${message}`);
  for (const child of children) child.kill('SIGKILL');
  process.exit(1);
}

function check(condition, message) {
  if (!condition) fail(message);
}

async function freePort() {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Starts an example with tsx (or `command`) and resolves to its base URL once it prints
 * `listening on <url>` (or what `ready` matches).
 */
async function start(
  name,
  env = {},
  command = [process.execPath, '--import', 'tsx', 'src/server.ts'],
  ready = /listening on (http:\/\/\S+)/,
) {
  const child = spawn(command[0], command.slice(1), {
    cwd: here(`./${name}/`),
    env: { ...process.env, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start in 60 s:\n${output}`)), 60_000);
    const read = (chunk) => {
      output += chunk;
      const match = ready.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ base: match[1], child });
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code}:\n${output}`));
    });
  });
}

async function stop(child) {
  child.removeAllListeners('exit');
  child.kill('SIGTERM');
  await once(child, 'exit');
}

/** A burst of 8 concurrent requests against a 5-token bucket: 5 (or 6, if a token refilled) pass. */
async function burst(name, base) {
  const responses = await Promise.all(Array.from({ length: 8 }, () => fetch(`${base}/`)));
  const allowed = responses.filter((r) => r.status === 200);
  const refused = responses.filter((r) => r.status === 429);
  check(
    allowed.length + refused.length === 8,
    `${name}: unexpected statuses ${responses.map((r) => r.status)}`,
  );
  check(allowed.length >= 5 && allowed.length <= 6, `${name}: ${allowed.length} of 8 allowed, expected 5`);
  for (const response of responses) {
    check(response.headers.get('ratelimit-policy') === '"burst";q=5;w=5', `${name}: RateLimit-Policy`);
    check(/^"burst";r=\d;t=\d+$/.test(response.headers.get('ratelimit') ?? ''), `${name}: RateLimit header`);
  }
  const remaining = allowed.map((r) => Number(/r=(\d)/.exec(r.headers.get('ratelimit'))[1])).sort();
  check(remaining.slice(0, 5).join() === '0,1,2,3,4', `${name}: remaining values ${remaining}`);
  const problem = refused[0];
  check(Number(problem.headers.get('retry-after')) >= 1, `${name}: Retry-After`);
  check(problem.headers.get('content-type').startsWith('application/problem+json'), `${name}: problem type`);
  const body = await problem.json();
  check(body.type === 'https://iana.org/assignments/http-problem-types#quota-exceeded', `${name}: body type`);
  await Promise.all(responses.map((r) => (r.bodyUsed ? undefined : r.arrayBuffer())));
  console.log(`smoke: ${name}: ${allowed.length} allowed, ${refused.length} refused, headers and body ok`);
}

async function example(name, env, extra, command, ready) {
  const { base, child } = await start(name, env, command, ready);
  try {
    await burst(name, base);
    if (extra) await extra(base);
  } finally {
    await stop(child);
  }
}

/**
 * After the burst, 32 more requests spread over the workers: the limit is one for the host (with a
 * memory store each worker would admit its own 5), and more than one worker answered.
 */
async function oneLimitForTheHost(name, base) {
  const responses = await Promise.all(Array.from({ length: 32 }, () => fetch(`${base}/`)));
  await Promise.all(responses.map((r) => r.arrayBuffer()));
  const allowed = responses.filter((r) => r.status === 200).length;
  const workers = new Set(responses.map((r) => r.headers.get('x-worker')));
  check(allowed <= 2, `${name}: ${allowed} of 32 more allowed after the burst (a token a second refills)`);
  check(workers.size >= 2, `${name}: answered by ${workers.size} worker(s), expected several`);
  console.log(
    `smoke: ${name}: 32 more, ${allowed} allowed, answered by ${workers.size} workers sharing one limit`,
  );
}

/** Runs the host store examples, each on a fresh store directory. */
async function hostExamples() {
  const store = mkdtempSync(join(tmpdir(), 'sluice-smoke-host-'));
  try {
    // node:cluster: the primary forks the workers and prints once they all listen.
    await example(
      'host-cluster',
      { WORKERS: '3', SLUICE_HOST_PATH: join(store, 'cluster') },
      (base) => oneLimitForTheHost('host-cluster (node:cluster)', base),
      [process.execPath, '--import', 'tsx', 'src/cluster.ts'],
      /workers listening on (http:\/\/\S+)/,
    );
    // PM2 in cluster mode, headless (pm2-runtime: no daemon, stops with this process's signal);
    // it passes the instances' output on: ready once all three say they listen.
    const pm2 = await start(
      'host-cluster',
      {
        WORKERS: '3',
        PORT: String(await freePort()),
        PM2_HOME: join(store, 'pm2'),
        SLUICE_HOST_PATH: join(store, 'pm2-store'),
      },
      [here('./host-cluster/node_modules/.bin/pm2-runtime'), 'start', 'ecosystem.config.cjs'],
      /(?:worker \d+ listening on (http:\/\/\S+)[\s\S]*?){3}/,
    );
    try {
      const base = pm2.base;
      await burst('host-cluster (PM2)', base);
      await oneLimitForTheHost('host-cluster (PM2)', base);
    } finally {
      await stop(pm2.child);
    }
  } finally {
    rmSync(store, { recursive: true, force: true });
  }
}

try {
  await example('express', {}, async (base) => {
    // The per-route login limit: 3 per minute on top of the global burst limit (already spent).
    const login = await fetch(`${base}/login`, { method: 'POST' });
    check(login.status === 429, `express: /login after the burst should be refused, got ${login.status}`);
  });
  await example('fastify', {}, async (base) => {
    const health = await fetch(`${base}/health`);
    check(health.status === 200 && health.headers.get('ratelimit') === null, 'fastify: /health is exempt');
  });
  await example('hono', {}, async (base) => {
    // The route's own login limit still has room, but the app-wide burst limit is spent.
    const login = await fetch(`${base}/login`, { method: 'POST' });
    check(login.status === 429, `hono: /login after the burst should be refused, got ${login.status}`);
  });
  await example('koa', {}, async (base) => {
    const login = await fetch(`${base}/login`, { method: 'POST' });
    check(login.status === 429, `koa: /login after the burst should be refused, got ${login.status}`);
  });
  await example('nestjs', {}, async (base) => {
    const login = await fetch(`${base}/login`, { method: 'POST' });
    check(login.status === 429, `nestjs: /login after the burst should be refused, got ${login.status}`);
  });
  await example('otel', {}, async (base) => {
    // The burst's decisions as Prometheus scrapes them; the shadow limit counted, never refusing.
    const text = await (await fetch(`${base}/metrics`)).text();
    const value = (labels) =>
      Number(new RegExp(`^sluice_decisions_total\\{${labels}[^}]*\\} (\\d+)$`, 'm').exec(text)?.[1]);
    const allowed = value('sluice_policy="burst",sluice_outcome="allowed"');
    const refused = value('sluice_policy="burst",sluice_outcome="refused",sluice_reason="rate-limited"');
    check(allowed + refused === 8 && allowed >= 5, `otel: burst decisions ${allowed}/${refused} in /metrics`);
    const shadow = value(
      'sluice_policy="strict",sluice_outcome="refused",sluice_reason="rate-limited",sluice_shadow="true"',
    );
    check(shadow === 6, `otel: the shadow limit's refusals in /metrics, got ${shadow}`);
    check(
      /^sluice_store_duration_count\{[^}]*\} 8$/m.test(text),
      'otel: store latency histogram in /metrics',
    );
  });
  await hostExamples();
  if (spawnSync('redis-server', ['--version']).status === 0) {
    const port = await freePort();
    const redis = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: 'ignore',
      },
    );
    children.push(redis);
    // Wait until it answers (the example waits for its connection, but needs a server to connect to).
    for (
      let i = 0;
      spawnSync('redis-cli', ['-p', String(port), 'ping'])
        .stdout?.toString()
        .trim() !== 'PONG';
      i++
    ) {
      check(i < 100, 'redis: redis-server did not start');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    try {
      await example('redis', { REDIS_URL: `redis://127.0.0.1:${port}` });
    } finally {
      redis.kill('SIGTERM');
      await once(redis, 'exit');
    }
  } else {
    console.log('smoke: redis: skipped (no redis-server on PATH)');
  }
} catch (error) {
  fail(error instanceof Error ? error.message : String(error));
}
console.log('smoke: all examples passed');

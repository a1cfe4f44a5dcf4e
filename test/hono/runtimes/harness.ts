/**
 * Real runtimes serving a Hono app built on the BUILT `@sluice/hono` (its dist, as a user
 * installs it): Bun, Deno and workerd, Cloudflare's Workers runtime, each installed from npm
 * (devDependencies `bun`, `deno`, `workerd`). The app is put together in a directory of its own
 * outside the workspace (no tsconfig paths reach it), whose node_modules links `@sluice/hono`
 * and `hono` (and on Bun and Deno `@sluice/redis` and `ioredis`): the README's example as written
 * at `/`, the behaviour checks (checks-app.ts) under `/checks/`, RedisStore (redis-app.ts) under
 * `/redis/` on Bun and Deno, and `/ready` for the start-up. One runtime process per test file.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { typescriptBlocks } from '../../consumer/markdown.js';
import { freePort } from '../../setup/redis-server.js';
import { ensureBuilt } from './built-packages.js';

export type Runtime = 'bun' | 'deno' | 'workerd';

const root = join(import.meta.dirname, '..', '..', '..');
const require = createRequire(join(root, 'package.json'));

/** The heading of the README section whose example must run as written on every runtime. */
const RUNTIMES_SECTION = '## Runtimes';

/** The first ```ts block of the Hono README's "Runtimes" section, exactly as users read it. */
export function readmeExample(): string {
  const readme = join(root, 'packages', 'hono', 'README.md');
  const headingLine = readFileSync(readme, 'utf8').split('\n').indexOf(RUNTIMES_SECTION) + 1;
  if (headingLine === 0) throw new Error(`packages/hono/README.md has no "${RUNTIMES_SECTION}" section`);
  const block = typescriptBlocks(readme, 'packages/hono/README.md').find(
    (b) => Number(b.where.split(':')[1]) > headingLine,
  );
  if (block === undefined) {
    throw new Error(`no ts block after "${RUNTIMES_SECTION}" in packages/hono/README.md`);
  }
  return block.code;
}

/**
 * Routes `/ready`, `/checks/*` (the behaviour checks), `/redis/*` (RedisStore, where the runtime
 * has TCP) and the rest (the README's example).
 */
const router = (redis: boolean) => `import checks from './checks-app.ts';
import readme from './readme-example.ts';
${redis ? "import redis from './redis-app.ts';\n" : ''}
type Fetch = (request: Request, env?: unknown, ctx?: unknown) => Response | Promise<Response>;

export const route: Fetch = (request, env, ctx) => {
  const path = new URL(request.url).pathname;
  if (path === '/ready') return new Response('ready');
  const app = path.startsWith('/checks/') ? checks : ${redis ? "path.startsWith('/redis/') ? redis : " : ''}readme;
  return (app.fetch as Fetch)(request, env, ctx);
};
`;

/** The runtimes where `RedisStore` runs: their `node:net` carries ioredis. */
export const WITH_TCP: readonly Runtime[] = ['bun', 'deno'];

/** Each runtime's entry: how it serves `route` on the loopback port. */
const ENTRY: Record<Runtime, string> = {
  // Bun serves a default export with `fetch`, passing the server as the second argument.
  bun: `import { route } from './router.ts';
export default { hostname: '127.0.0.1', port: Number(process.env.PORT), fetch: route };
`,
  // \`deno serve\` passes the handler info (remoteAddr) as the second argument.
  deno: `import { route } from './router.ts';
export default { fetch: route };
`,
  // A module Worker: fetch(request, env, ctx).
  workerd: `import { route } from './router.ts';
export default { fetch: route };
`,
};

/** A running runtime serving the app. */
export interface RuntimeApp {
  readonly port: number;
  /** What the runtime printed so far (stdout and stderr). */
  output(): string;
  stop(): Promise<void>;
}

/** The app's directory: the files above, and node_modules links to the built packages. */
function appDirectory(dir: string, runtime: Runtime): void {
  const redis = WITH_TCP.includes(runtime);
  const link = (name: string, target: string) => symlinkSync(target, join(dir, 'node_modules', name), 'dir');
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ type: 'module', private: true }, null, 2)}\n`);
  mkdirSync(join(dir, 'node_modules', '@sluice'), { recursive: true });
  link('@sluice/hono', join(root, 'packages', 'hono'));
  link('hono', realpathSync(join(root, 'node_modules', 'hono')));
  if (redis) {
    link('@sluice/redis', join(root, 'packages', 'redis'));
    link('ioredis', realpathSync(join(root, 'node_modules', 'ioredis')));
    copyFileSync(join(import.meta.dirname, 'redis-app.ts'), join(dir, 'redis-app.ts'));
  }
  writeFileSync(join(dir, 'readme-example.ts'), `${readmeExample()}\n`);
  copyFileSync(join(import.meta.dirname, 'checks-app.ts'), join(dir, 'checks-app.ts'));
  writeFileSync(join(dir, 'router.ts'), router(redis));
  writeFileSync(join(dir, 'server.ts'), ENTRY[runtime]);
}

/** The executable of an npm package's runtime, as the package itself finds it. */
function executable(runtime: Runtime): string {
  const dir = (name: string) => join(require.resolve(`${name}/package.json`), '..');
  if (runtime === 'bun') return join(dir('bun'), 'bin', 'bun.exe'); // the binary, put there by its postinstall
  if (runtime === 'deno') {
    const install = createRequire(join(dir('deno'), 'package.json'))('./install_api.cjs') as {
      runInstall(): string;
    };
    return install.runInstall();
  }
  return (require('workerd') as { default: string }).default;
}

/** workerd's configuration: the bundled Worker on the loopback port. */
function workerdConfig(port: number): string {
  return `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    (name = "loopback", network = (allow = ["local"])),
  ],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")],
);

const worker :Workerd.Worker = (
  modules = [(name = "worker.js", esModule = embed "worker.js")],
  compatibilityDate = "2026-11-01",
  # fetch() may reach the test's gate server on loopback (checks-app.ts).
  globalOutbound = "loopback",
);
`;
}

/** Bundles the Worker as wrangler does without nodejs_compat: browser platform, no Node built-ins. */
async function bundleWorker(dir: string): Promise<void> {
  const esbuild = await import('esbuild');
  await esbuild.build({
    absWorkingDir: dir,
    entryPoints: ['server.ts'],
    outfile: 'worker.js',
    bundle: true,
    format: 'esm',
    platform: 'browser',
    conditions: ['workerd', 'worker', 'browser'],
    target: 'es2022',
    logLevel: 'silent',
  });
}

function command(runtime: Runtime, dir: string, port: number): { args: string[]; env: NodeJS.ProcessEnv } {
  if (runtime === 'bun') {
    return { args: ['run', 'server.ts'], env: { PORT: String(port), DO_NOT_TRACK: '1' } };
  }
  if (runtime === 'deno') {
    return {
      args: [
        'serve',
        '--quiet',
        '--no-prompt',
        // Its port, and the test's gate server (checks-app.ts), on loopback only.
        '--allow-net=127.0.0.1',
        '--allow-read',
        // ioredis' dependency `debug` reads the environment when it loads.
        '--allow-env',
        '--host',
        '127.0.0.1',
        '--port',
        String(port),
        'server.ts',
      ],
      env: { DENO_DIR: join(dir, '.deno'), DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' },
    };
  }
  writeFileSync(join(dir, 'config.capnp'), workerdConfig(port));
  return { args: ['serve', 'config.capnp'], env: {} };
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** How long a runtime may take to answer its first request: generous, for a loaded machine. */
const START_TIMEOUT_MS = 60_000;

/**
 * Starts `runtime` on a free loopback port serving the app, and waits until it answers. `redis`:
 * where `/redis/` finds its redis-server, and the key prefix it owns there.
 */
export async function serveOnRuntime(
  runtime: Runtime,
  redis: { port: number; prefix: string },
): Promise<RuntimeApp> {
  await ensureBuilt(['core', 'redis', 'hono']);
  const dir = await mkdtemp(join(tmpdir(), `sluice-${runtime}-`));
  appDirectory(dir, runtime);
  if (runtime === 'workerd') await bundleWorker(dir);
  const port = await freePort();
  const { args, env } = command(runtime, dir, port);
  const child = spawn(executable(runtime), args, {
    cwd: dir,
    env: { ...process.env, ...env, REDIS_PORT: String(redis.port), REDIS_PREFIX: redis.prefix },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk;
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    output += chunk;
  });
  const stop = async () => {
    child.kill('SIGKILL');
    await exited(child);
    await rm(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await stop();
      throw new Error(`${runtime} exited before serving (${child.exitCode ?? child.signalCode}):\n${output}`);
    }
    try {
      // Bounded: a runtime that accepts the connection before its app is loaded must not hold
      // this loop (and its deadline) on one request that never answers.
      const reply = await fetch(`http://127.0.0.1:${port}/ready`, { signal: AbortSignal.timeout(5_000) });
      if ((await reply.text()) === 'ready') break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${runtime} did not answer within ${START_TIMEOUT_MS / 1000} s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { port, output: () => output, stop };
}

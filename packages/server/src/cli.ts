#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { SluiceError } from '@sluice/core';
import { autoWorkers, severalWorkers, WORKER_SHARDS } from './auto-workers.js';
import { defaultLog, resolveServerOptions, type ServerOptions } from './options.js';
import { startRls } from './rls/cli-rls.js';
import { SluiceServer } from './server.js';
import {
  awaitMayOpen,
  followPauses,
  openedAwaitServe,
  openShardsOnce,
  reportListening,
  runPrimary,
  WORKER_EVENTS,
  workerIndex,
} from './workers.js';

const USAGE = `usage: sluice-server [--data ./sluice-data] [--port 9049] [--bind 127.0.0.1] [--requirepass PASS]
  [--tls-cert FILE --tls-key FILE]
  [--max-clients 10000] [--max-frame-bytes 1048576] [--max-args 1024] [--durability commit|flush]
  [--cache-keys 100000] [--max-log-entries 10000] [--workers 1|N|auto] [--shards N]
  [--grpc-port 8081 --rls-config DIR [--rls-redis redis://HOST:PORT | --rls-redis-cluster HOST:PORT,...] [--rls-redis-timeout 100]
   [--rls-shadow-mode] [--rls-response-headers]]
The gRPC port serves Envoy's rate limit service (envoyproxy/ratelimit's YAML files in DIR) and
grpc.health.v1 (from every worker with --workers; SIGHUP reloads DIR); its counters are in the
server's LMDB, or in Redis when one is named.
The password may also come from the SLUICE_SERVER_PASSWORD environment variable (kept out of ps).`;

/** `--workers`: a whole number ≥ 1, or `auto` (decided once the directory's shards are known). */
function workerCount(text: string | undefined): number | 'auto' {
  if (text === undefined) return 1;
  if (text === 'auto') return 'auto';
  const count = integer('workers', text)!;
  if (count < 1) throw new Error(`--workers must be a whole number ≥ 1 or auto; got ${JSON.stringify(text)}`);
  return count;
}

function integer(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^[0-9]+$/.test(text))
    throw new Error(`--${flag} must be a whole number; got ${JSON.stringify(text)}`);
  return Number(text);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      data: { type: 'string' },
      port: { type: 'string' },
      bind: { type: 'string' },
      requirepass: { type: 'string' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      'max-clients': { type: 'string' },
      'max-frame-bytes': { type: 'string' },
      'max-args': { type: 'string' },
      durability: { type: 'string' },
      shards: { type: 'string' },
      'cache-keys': { type: 'string' },
      'max-log-entries': { type: 'string' },
      workers: { type: 'string' },
      'grpc-port': { type: 'string' },
      'rls-config': { type: 'string' },
      'rls-redis': { type: 'string' },
      'rls-redis-cluster': { type: 'string' },
      'rls-redis-timeout': { type: 'string' },
      'rls-shadow-mode': { type: 'boolean' },
      'rls-response-headers': { type: 'boolean' },
      help: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const options: ServerOptions = { dataDir: values.data ?? './sluice-data' };
  const set = <K extends keyof ServerOptions>(key: K, value: ServerOptions[K] | undefined) => {
    if (value !== undefined) options[key] = value;
  };
  set('port', integer('port', values.port));
  set('host', values.bind);
  if ((values['tls-cert'] === undefined) !== (values['tls-key'] === undefined)) {
    throw new Error('--tls-cert and --tls-key go together');
  }
  if (values['tls-cert'] !== undefined && values['tls-key'] !== undefined) {
    options.tls = { cert: readFileSync(values['tls-cert']), key: readFileSync(values['tls-key']) };
  }
  set('requirePass', values.requirepass ?? process.env.SLUICE_SERVER_PASSWORD);
  set('maxClients', integer('max-clients', values['max-clients']));
  set('maxFrameBytes', integer('max-frame-bytes', values['max-frame-bytes']));
  set('maxArgs', integer('max-args', values['max-args']));
  set('durability', values.durability as ServerOptions['durability']);
  set('shards', integer('shards', values.shards));
  const asked = workerCount(values.workers);
  const several = severalWorkers(asked, availableParallelism());
  // With several workers every one writes, so a worker's cache is emptied at nearly every turn
  // (another process committed): off unless asked for.
  set('cacheKeys', integer('cache-keys', values['cache-keys']) ?? (several ? 0 : undefined));
  set('maxLogEntries', integer('max-log-entries', values['max-log-entries']));
  const grpcPort = integer('grpc-port', values['grpc-port']);
  if ((grpcPort === undefined) !== (values['rls-config'] === undefined)) {
    throw new Error('--grpc-port and --rls-config go together');
  }
  const worker = workerIndex();
  // The primary (several workers asked for): every option checked once here, not by each worker
  // dying over it in turn; the directory made (with WORKER_SHARDS unless --shards says) or
  // checked, and auto's count chosen for its shards.
  const resolved = several && worker === undefined ? resolveServerOptions(options) : undefined;
  const shards = resolved && openShardsOnce(resolved.dataDir, resolved.shards, WORKER_SHARDS);
  const workers =
    asked !== 'auto' ? asked : shards === undefined ? 1 : autoWorkers(availableParallelism(), shards);
  if (resolved !== undefined && workers > 1) {
    const details = {
      host: options.host ?? '127.0.0.1',
      tls: options.tls !== undefined,
      dataDir: options.dataDir,
      shards,
      ...(grpcPort === undefined ? {} : { grpcPort }),
    };
    // Every worker serves the gRPC port too (node:cluster shares it as it shares the RESP port);
    // SIGHUP to the primary reloads the rate limit config in each of them.
    const forward = grpcPort === undefined ? [] : (['SIGHUP'] as const);
    process.exit(await runPrimary(workers, details, defaultLog, forward));
  }
  if (worker !== undefined) {
    options.worker = worker;
    // The primary says 'listening' once every worker is, and 'stopped' once every worker has.
    options.log = (event, fields) =>
      defaultLog(WORKER_EVENTS[event] ?? event, { worker, pid: process.pid, ...fields });
  }
  // A worker opens the environment when the primary says (see awaitMayOpen): a restarted one
  // while the others have paused their transactions.
  if (worker !== undefined) await awaitMayOpen();
  const server = new SluiceServer(options);
  if (worker !== undefined) followPauses(server.stateDb);
  const rls =
    grpcPort === undefined
      ? undefined
      : await startRls(server, {
          port: grpcPort,
          host: options.host,
          configDir: values['rls-config']!,
          redis: values['rls-redis'],
          redisCluster: values['rls-redis-cluster'],
          redisTimeout: integer('rls-redis-timeout', values['rls-redis-timeout']),
          shadowMode: values['rls-shadow-mode'] === true,
          responseHeaders: values['rls-response-headers'] === true,
          log: options.log ?? defaultLog,
        });
  // A worker listens once every worker has its environment open (openedAwaitServe).
  let serving = worker === undefined;
  const served = serving
    ? Promise.resolve()
    : openedAwaitServe().then(() => {
        serving = true;
      });
  const listening = served
    .then(() => server.listen())
    .then(async (port) => {
      await rls?.service.listen();
      return port;
    });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    // A worker stopped before the primary let it serve never listens: nothing to wait for.
    (serving ? listening : Promise.resolve(0))
      // The gRPC side first: health turns NOT_SERVING, calls in flight are answered, then LMDB closes.
      .then(() => rls?.close())
      .then(() => server.close())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };
  // Before 'listening' is logged: a signal sent on reading that line must find the handler, not
  // the default action (killed, LMDB not flushed). `on`, not `once`: a worker gets SIGTERM from
  // the terminal's group and from its primary.
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  // As envoyproxy/ratelimit reloads on a change; SIGHUP reloads now (the watcher may miss a
  // change on some file systems).
  if (rls !== undefined) process.on('SIGHUP', () => rls.service.reload());
  const port = await listening;
  if (worker !== undefined) reportListening(port);
}

main().catch((err: unknown) => {
  const message = err instanceof SluiceError ? `${err.code}: ${err.message}` : (err as Error).message;
  process.stderr.write(`sluice-server: ${message}\n${USAGE}\n`);
  process.exit(2);
});

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const here = new URL('.', import.meta.url).pathname;

/**
 * redis-server's arguments for the server benches: loopback, its files in `dir`, AOF flushed
 * every second (the promise sluice-server's `--durability commit` makes), no RDB snapshots.
 */
export function redisPeerArgs(port: number, dir: string): string[] {
  return [
    ...['--port', String(port), '--bind', '127.0.0.1', '--dir', dir],
    ...['--appendonly', 'yes', '--appendfsync', 'everysec', '--save', ''],
  ];
}

/** Loads the token bucket both sides run (token-bucket.lua) into the redis-server on `port`; its SHA. */
export function loadBucketScript(port: number): string {
  return execFileSync(
    'redis-cli',
    ['-p', String(port), 'SCRIPT', 'LOAD', readFileSync(join(here, 'token-bucket.lua'), 'utf8')],
    { encoding: 'utf8' },
  ).trim();
}

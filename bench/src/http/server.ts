/**
 * The server child: one subject's app in its own process, so the load generator (autocannon, in
 * the parent) never shares its event loop. Talks to the parent over the fork IPC channel:
 * sends `{ ready, port }` once listening; answers `'cpu'` with its CPU time so far; on `'stop'`
 * sends `{ storeErrors }`, closes and exits normally (so `node --cpu-prof` writes its profile).
 *
 * usage (forked by section.ts or profile.ts): server.ts <subject id> [--redis-port=N]
 */
import { buildApp } from './apps.js';
import { httpSubject } from './subjects.js';

export type ToServer = 'cpu' | 'stop';
export type FromServer =
  | { readonly type: 'ready'; readonly port: number }
  | { readonly type: 'cpu'; readonly micros: number }
  | { readonly type: 'stopped'; readonly storeErrors: number };

const [id, ...rest] = process.argv.slice(2);
const redisArg = rest.find((a) => a.startsWith('--redis-port='));
const send = (message: FromServer) => process.send?.(message);

const app = await buildApp(
  httpSubject(id ?? ''),
  redisArg === undefined ? undefined : Number(redisArg.slice(13)),
);
const address = app.server.address();
process.on('message', (message: ToServer) => {
  if (message === 'cpu') {
    const { user, system } = process.cpuUsage();
    send({ type: 'cpu', micros: user + system });
  } else if (message === 'stop') {
    send({ type: 'stopped', storeErrors: app.storeErrors() });
    void app.close().then(() => process.exit(0));
  }
});
// The parent went away without saying stop: do not linger.
process.on('disconnect', () => process.exit(0));
send({ type: 'ready', port: typeof address === 'object' && address !== null ? address.port : 0 });

// Type tests, checked by `pnpm typecheck` (never run): what a route's `config` accepts.
import { fixedWindow, type SluiceOptions, sluice } from '@sluice/fastify';
import Fastify from 'fastify';

const app = Fastify();
await app.register(sluice, { global: false });
const handler = async () => 'ok';
const limits = [{ name: 'route', algorithm: fixedWindow({ limit: 5, window: '1m' }) }];

app.get('/options', { config: { rateLimit: { limits, hook: 'preHandler' } } }, handler);
app.get('/exempt', { config: { rateLimit: false, concurrencyLimit: false } }, handler);
app.get('/guards', { config: { fleetShed: { priority: 'low' }, concurrencyLimit: { limit: 2 } } }, handler);
app.route({ method: 'GET', url: '/route', config: { rateLimit: { limits } }, handler });
const shared: SluiceOptions = { limits };
app.get('/variable', { config: { rateLimit: shared } }, handler);

// @ts-expect-error `true` is not an options object
app.get('/true', { config: { rateLimit: true } }, handler);
// @ts-expect-error a string is not an options object
app.get('/yes', { config: { rateLimit: 'yes' } }, handler);
// @ts-expect-error a number is not an options object
app.get('/one', { config: { concurrencyLimit: 1 } }, handler);
// @ts-expect-error `true` is not an options object
app.route({ method: 'GET', url: '/route-true', config: { fleetShed: true }, handler });
// @ts-expect-error an unknown `hook`
app.get('/hook', { config: { rateLimit: { hook: 'onSend' } } }, handler);
// @ts-expect-error a misspelt option, checked with `satisfies` (inline, the plugin refuses it at registration)
app.get('/typo', { config: { rateLimit: { limitz: [] } satisfies SluiceOptions } }, handler);

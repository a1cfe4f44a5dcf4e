// What every adapter subject shares: the app spec the suites write once, the probe, the reply
// and app shapes, and the helpers that send requests over real connections. Each framework's
// subject (its real server built from an AppSpec) is in subjects/<adapter>.ts; the list the
// suites run on is subjects.ts. Adding an adapter: a file in subjects/ and one line there.
import { once } from 'node:events';
import { request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RateLimitControl, Store } from '@sluice/core';
import type {
  HttpAdaptiveConcurrencyOptions,
  HttpConcurrencyOptions,
  HttpFleetShedOptions,
  HttpLimitOptions,
  HttpUtilizationShedOptions,
} from '@sluice/core/adapter';

/** Options written once for every adapter: keys use the access argument, never the framework's request. */
export type Options = HttpLimitOptions<unknown>;

/** The guards, written once for every adapter (keys and priorities read only headers). */
export interface Guards {
  concurrencyLimit?: HttpConcurrencyOptions<unknown> | false;
  fleetShed?: HttpFleetShedOptions<unknown> | false;
  utilizationShed?: HttpUtilizationShedOptions<unknown> | false;
  adaptiveConcurrency?: HttpAdaptiveConcurrencyOptions<unknown> | false;
}

/** The guards in the order every adapter runs them: shedders, the concurrency limit, the adaptive limit. */
export const GUARD_ORDER = [
  'utilizationShed',
  'fleetShed',
  'concurrencyLimit',
  'adaptiveConcurrency',
] as const;

/**
 * What the app's handlers did, and a gate the `'wait'` handlers block on until `open()`: a
 * request held in flight for as long as the test wants, with no timer.
 */
export class Probe {
  /** Paths whose handler ran, in order. */
  readonly handled: string[] = [];
  private opened!: () => void;
  private readonly gate = new Promise<void>((resolve) => {
    this.opened = resolve;
  });

  /**
   * Runs a handler of `kind`; answers the fields it adds to the JSON body. The app-code kinds call
   * the middleware's `RateLimitControl` (`control`) on the framework's request `req`.
   */
  async run(
    path: string,
    kind: RouteSpec['handler'],
    control?: Control,
    req?: unknown,
    header?: (name: string) => string | undefined,
  ): Promise<Record<string, unknown>> {
    this.handled.push(path);
    if (kind === 'throw') throw new Error('handler failed');
    if (kind === 'wait') await this.gate;
    if (kind === 'settle') await control!.settle(req, Number(header!('x-actual')));
    if (kind === 'peek') return { peeked: (await control!.peek(req))?.remaining ?? null };
    if (kind === 'reset') await control!.reset(req);
    return {};
  }

  open(): void {
    this.opened();
  }
}

/** A middleware's app-code methods, whatever its request type. */
export type Control = RateLimitControl<unknown>;

export interface RouteSpec {
  method: 'GET' | 'POST';
  path: string;
  /**
   * What the handler does: answer at once (default), throw (a 500), wait for `probe.open()`, or
   * call the limits' app-code method (the route's own middleware's, else the app-wide one's):
   * `settle` to the `X-Actual` header, `peek` (answered as `peeked`), `reset` its keys.
   */
  handler?: 'ok' | 'throw' | 'wait' | 'settle' | 'peek' | 'reset';
  /** Express: per-route guard middlewares. Fastify: `config.<guard>` (`false` exempts). */
  guards?: Guards;
  /** Express: a per-route middleware. Fastify: `config.rateLimit` (merged with the global options). */
  limit?: Options | false;
  /** Fastify only: `onRequest: app.rateLimit(decorator)`. */
  decorator?: Options;
}

export interface AppSpec {
  /**
   * Global limits: `app.use(rateLimit(options))` / `app.register(sluice, options)`. Without them,
   * no global limit (`app.register(sluice, { global: false })`, `new RateLimitGuard({ global: false })`).
   */
  options?: Options;
  /**
   * The global rate limit made with no options at all, the zero-config start (issue 25 §3):
   * `app.use(rateLimit())`, `app.register(sluice)`, `new RateLimitGuard()`. `options`,
   * `guards` and `customHandler` are then left out.
   */
  defaults?: boolean;
  /** Global guards, before the global limits: `app.use(...)` / the plugin's guard options. */
  guards?: Guards;
  /** Records handler runs and holds `'wait'` handlers. */
  probe?: Probe;
  routes: RouteSpec[];
  /** The framework's trust-proxy setting. */
  trustProxy?: boolean | string;
  /** Replace the problem body with `{ custom: true, policy }`. */
  customHandler?: boolean;
}

export interface Reply {
  status: number;
  headers: Record<string, string | undefined>;
  body: unknown;
}

export interface TestApp {
  request(method: 'GET' | 'HEAD' | 'POST', path: string, headers?: Record<string, string>): Promise<Reply>;
  /**
   * One request to the app's Node server over a Unix domain socket, where the connection has no
   * client address (`remoteAddress` is undefined), as behind a proxy that reaches the app so.
   */
  requestOverUnixSocket(
    method: 'GET' | 'POST',
    path: string,
    headers?: Record<string, string>,
  ): Promise<Reply>;
  /** Starts a real HTTP server on a free loopback port; returns its base URL. */
  listen(): Promise<string>;
  /** Open connections of the server `listen()` started, as the server counts them. */
  connections(): Promise<number>;
  /** `reset(key)` of the app-wide limits, from the app's code. */
  reset(key: string): Promise<void>;
  close(): Promise<void>;
}

export interface Subject {
  name: string;
  /** Fastify's per-route config adds to, overrides and exempts from the global limits. */
  routeConfig: boolean;
  build(spec: AppSpec): Promise<TestApp>;
  /** Creates the adapter with these options; rejects with the creation error. */
  create(options: unknown): Promise<void>;
  /** Creates one guard with these options; rejects with the creation error. */
  createGuard(name: (typeof GUARD_ORDER)[number], options: unknown): Promise<void>;
}

/**
 * The behaviour suite's app, store and fake clock, for the suites nested in it: each test gets a
 * fresh store and the clock at 0, and its app is closed after it.
 */
export interface SuiteFixture {
  build(spec: AppSpec): Promise<TestApp>;
  app(): TestApp;
  store(): Store;
  setNow(ms: number): void;
}

/** Makes a store; the behaviour suite passes its fake clock (ms since the epoch). */
export type StoreFactory = (clock: () => number) => Store | Promise<Store>;

export function normalise(headers: Record<string, unknown>): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(headers)) {
    out[name.toLowerCase()] =
      value === undefined ? undefined : Array.isArray(value) ? value.join(', ') : String(value);
  }
  return out;
}

export function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function connectionsOf(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.getConnections((error, count) => (error ? reject(error) : resolve(count)));
  });
}

let sockets = 0;

/**
 * One request to `server` over a Unix domain socket: a relay listening on a socket file hands each
 * connection to the app's server as its own (`'connection'`), so the app sees a connection with
 * no client address, as when a proxy reaches it over a Unix socket.
 */
export async function overUnixSocket(
  server: Server,
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<Reply> {
  const socketPath = join(tmpdir(), `sluice-${process.pid}-${++sockets}.sock`);
  const relay = createNetServer((socket) => server.emit('connection', socket));
  relay.listen(socketPath);
  await once(relay, 'listening');
  try {
    return await send({ socketPath }, method, path, headers);
  } finally {
    relay.close();
  }
}

/**
 * One request on its own connection (closed after it), to a real server, as supertest sends them:
 * to `base` over TCP, or to `socketPath` over a Unix domain socket.
 */
function send(
  target: { base: string } | { socketPath: string },
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const onResponse = (response: IncomingMessage) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
      });
      response.on('end', () =>
        resolve({
          status: response.statusCode!,
          headers: normalise(response.headers as Record<string, unknown>),
          body: parse(text),
        }),
      );
    };
    const options = { method, headers, agent: false };
    const request =
      'base' in target
        ? httpRequest(`${target.base}${path}`, options, onResponse)
        : httpRequest({ ...options, socketPath: target.socketPath, path }, onResponse);
    request.on('error', reject);
    request.end();
  });
}

/** A started server's `TestApp`: every request goes over a real connection. */
export async function serverApp(server: Server): Promise<Omit<TestApp, 'reset'>> {
  if (!server.listening) await once(server, 'listening');
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    request: (method, path, headers = {}) => send({ base }, method, path, headers),
    requestOverUnixSocket: (method, path, headers = {}) => overUnixSocket(server, method, path, headers),
    listen: async () => base,
    connections: () => connectionsOf(server),
    async close() {
      // Requests still in flight (their handlers were just released) finish first; every request
      // is on its own connection, so none stays open once answered.
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeIdleConnections();
      const stuck = setTimeout(() => server.closeAllConnections(), 2000);
      await closed;
      clearTimeout(stuck);
    },
  };
}

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  type ChannelOptions,
  type Client,
  credentials,
  type GrpcObject,
  loadPackageDefinition,
  type ServiceClientConstructor,
  type ServiceError,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { LmdbBackend, RateLimitService, type RateLimitServiceOptions, type RlsBackend } from '@sluice/server';
import { protoDir } from '../../packages/server/src/rls/proto.js';
import { type LoggedEvent, startServer, type TestServer } from './harness.js';

/**
 * The rate limit service under test and its clients. The main client is generated from Envoy's
 * PUBLISHED rls.proto, as shipped in the npm package @grpc/grpc-js-xds (its deps/envoy-api tree,
 * pinned in the root devDependencies), never from sluice-server's own transcription. That
 * snapshot predates the descriptor's `hits_addend` (field 3), so the one test of it uses a client
 * from our transcription (`ownClient`), and says so.
 */

const require = createRequire(import.meta.url);
const XDS_DEPS = join(dirname(require.resolve('@grpc/grpc-js-xds/package.json')), 'deps');

const CLIENT_OPTIONS = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true };

function serviceAt(root: GrpcObject, path: string): ServiceClientConstructor {
  let node: unknown = root;
  for (const part of path.split('.')) node = (node as Record<string, unknown>)[part];
  return node as ServiceClientConstructor;
}

let published: ServiceClientConstructor | undefined;
let own: { rls: ServiceClientConstructor; health: ServiceClientConstructor } | undefined;

/** The RateLimitService client class from Envoy's published proto. */
export function publishedService(): ServiceClientConstructor {
  published ??= serviceAt(
    loadPackageDefinition(
      loadSync('envoy/service/ratelimit/v3/rls.proto', {
        ...CLIENT_OPTIONS,
        includeDirs: [
          join(XDS_DEPS, 'envoy-api'),
          join(XDS_DEPS, 'xds'),
          join(XDS_DEPS, 'protoc-gen-validate'),
        ],
      }),
    ),
    'envoy.service.ratelimit.v3.RateLimitService',
  );
  return published;
}

function ownServices() {
  if (own === undefined) {
    const root = loadPackageDefinition(
      loadSync(['envoy/service/ratelimit/v3/rls.proto', 'grpc/health/v1/health.proto'], {
        ...CLIENT_OPTIONS,
        includeDirs: [protoDir()],
      }),
    );
    own = {
      rls: serviceAt(root, 'envoy.service.ratelimit.v3.RateLimitService'),
      health: serviceAt(root, 'grpc.health.v1.Health'),
    };
  }
  return own;
}

export interface Status {
  code: 'UNKNOWN' | 'OK' | 'OVER_LIMIT';
  current_limit: { name: string; requests_per_unit: number; unit: string } | null;
  limit_remaining: number;
  duration_until_reset: { seconds: number; nanos: number } | null;
}

export interface Response {
  overall_code: 'UNKNOWN' | 'OK' | 'OVER_LIMIT';
  statuses: Status[];
  response_headers_to_add: { key: string; value: string }[];
}

export type Descriptor = {
  entries: { key: string; value: string }[];
  limit?: { requests_per_unit: number; unit: string };
  hits_addend?: { value: number };
};

export interface RlsClient {
  readonly raw: Client;
  /** ShouldRateLimit; rejects with the ServiceError. */
  should(domain: string, descriptors: Descriptor[], hitsAddend?: number): Promise<Response>;
  close(): void;
}

function clientOf(Ctor: ServiceClientConstructor, port: number, options: ChannelOptions = {}): RlsClient {
  const raw = new Ctor(`127.0.0.1:${port}`, credentials.createInsecure(), {
    'grpc.max_send_message_length': 8 * 1024 * 1024,
    ...options,
  });
  return {
    raw,
    should(domain, descriptors, hitsAddend = 0) {
      return new Promise((resolve, reject) => {
        (
          raw as unknown as Record<
            string,
            (req: unknown, cb: (e: ServiceError | null, r: Response) => void) => void
          >
        ).ShouldRateLimit!({ domain, descriptors, hits_addend: hitsAddend }, (err, res) =>
          err === null ? resolve(res) : reject(err),
        );
      });
    },
    close: () => raw.close(),
  };
}

/**
 * A client from Envoy's published proto. `options`: the channel's (e.g.
 * `'grpc.use_local_subchannel_pool': 1` for a connection of its own: by default grpc-js shares one
 * between the clients of a target).
 */
export function publishedClient(port: number, options?: ChannelOptions): RlsClient {
  return clientOf(publishedService(), port, options);
}

/** A client from sluice-server's own proto (for the descriptor's hits_addend, absent from the published snapshot). */
export function ownClient(port: number): RlsClient {
  return clientOf(ownServices().rls, port);
}

/** A grpc.health.v1 client. */
export function healthClient(port: number): Client {
  return new (ownServices().health)(`127.0.0.1:${port}`, credentials.createInsecure());
}

/** d('key', 'value', 'key2', 'value2'…): a descriptor from its entries. */
export function d(...kv: string[]): Descriptor {
  const entries: { key: string; value: string }[] = [];
  for (let i = 0; i < kv.length; i += 2) entries.push({ key: kv[i]!, value: kv[i + 1]! });
  return { entries };
}

export interface RlsSubject {
  readonly rls: RateLimitService;
  readonly port: number;
  readonly dir: string;
  readonly events: LoggedEvent[];
  readonly server: TestServer | undefined;
  /** Moves the clock the server decides by (LMDB: the server's clock; a store: the service's). */
  readonly clock: { now: number };
  write(name: string, yaml: string): Promise<void>;
  client(): RlsClient;
  stop(): Promise<void>;
}

/** A config directory holding `files`. */
export async function configDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-rls-'));
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}

/**
 * A sluice-server in this process with its rate limit service on a free loopback port, deciding
 * in the server's LMDB (or in `backend(clock)` when given), at a clock the test moves.
 */
export async function startRls(
  files: Record<string, string>,
  options: Partial<RateLimitServiceOptions> & { backend?: never } = {},
  backend?: (clock: () => number) => RlsBackend,
  start = Date.UTC(2030, 0, 1, 0, 0, 0),
): Promise<RlsSubject> {
  const clock = { now: start };
  const dir = await configDir(files);
  const events: LoggedEvent[] = [];
  const server = backend === undefined ? await startServer({ clock: () => clock.now }) : undefined;
  const rls = new RateLimitService({
    configDir: dir,
    backend: backend === undefined ? new LmdbBackend(server!.server.stateDb) : backend(() => clock.now),
    port: 0,
    watch: false,
    log: (event, fields) => events.push({ event, fields }),
    ...options,
  });
  const port = await rls.listen();
  const clients: RlsClient[] = [];
  return {
    rls,
    port,
    dir,
    events,
    server,
    clock,
    write: (name, yaml) => writeFile(join(dir, name), yaml),
    client() {
      const c = publishedClient(port);
      clients.push(c);
      return c;
    },
    async stop() {
      for (const c of clients) c.close();
      await rls.close();
      await server?.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

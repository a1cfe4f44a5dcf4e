import { ErrorCode, SluiceError } from '@sluice/core';
import type { RlsBackend } from './backends.js';
import { ConfigDirectory } from './config-directory.js';
import { GrpcError, GrpcStatus } from './grpc-frames.js';
import { GrpcHttp2Server, type GrpcMethod, type ServerStreamCall } from './grpc-http2-server.js';
import { type LoadedProtos, loadProtos } from './proto.js';
import { decodeRateLimitRequest, encodeRateLimitResponse } from './rls-codec.js';
import {
  BadRequest,
  type DecideOptions,
  type RateLimitResponse,
  shouldRateLimit,
} from './should-rate-limit.js';
import { type DescriptorCounters, RlsStats } from './stats.js';

export const RLS_SERVICE_NAME = 'envoy.service.ratelimit.v3.RateLimitService';
const HEALTH_SERVICE_NAME = 'grpc.health.v1.Health';

export interface RateLimitServiceOptions {
  /**
   * Directory of envoyproxy/ratelimit YAML files (`*.yaml`, `*.yml`; dotfiles skipped), loaded
   * at start (an error there throws) and again whenever a file in it changes.
   */
  configDir: string;
  /** Where counters live: `LmdbBackend` (the server's LMDB) or `StoreBackend` (RedisStore…). */
  backend: RlsBackend;
  /** gRPC port; 0 picks a free one. @default 8081 (envoyproxy/ratelimit's) */
  port?: number;
  /** Address to bind. @default '127.0.0.1' */
  host?: string;
  /** Reload when the directory changes. @default true */
  watch?: boolean;
  /** ms the directory must be quiet before a reload. @default 200 */
  reloadDelay?: number;
  /** Answer OK overall whatever the descriptors say, counting as usual (their SHADOW_MODE). @default false */
  shadowMode?: boolean;
  /**
   * Add the IETF RateLimit headers of the descriptor closest to its limit to the response (their
   * LIMIT_RESPONSE_HEADERS_ENABLED), under these names or the defaults
   * (`RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`). @default false
   */
  responseHeaders?: boolean | { limit?: string; remaining?: string; reset?: string };
  /** Most descriptors in one request; more is INVALID_ARGUMENT. @default 1000 */
  maxDescriptors?: number;
  /** Most entries in one descriptor; more is INVALID_ARGUMENT. @default 64 */
  maxEntries?: number;
  /** Largest request message, bytes (gRPC's own limit; past it RESOURCE_EXHAUSTED). @default 4194304 */
  maxMessageBytes?: number;
  /** Share of a limit past which hits count as near the limit (their NEAR_LIMIT_RATIO). @default 0.8 */
  nearLimitRatio?: number;
  /** Most stats keys kept (detailed_metric can mint one per client value). @default 10000 */
  maxStatsKeys?: number;
  /** Longest wait for calls in flight at `close()`, ms; then they are cancelled. @default 10000 */
  closeTimeout?: number;
  /** Events (listening, stopped, config-reloaded, config-refused, decide-error). @default none */
  log?: (event: string, fields: Record<string, unknown>) => void;
}

const HEALTH = { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 } as const;

function positive(option: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${option} must be a whole number ≥ 1; got ${String(value)}`,
      {
        option,
        value,
      },
    );
  }
  return value;
}

/**
 * Envoy's rate limit service (`envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`) on
 * gRPC, with the gRPC health protocol beside it, answering from envoyproxy/ratelimit's YAML
 * config over sluice's algorithms.
 *
 * @example
 * const server = new SluiceServer({ dataDir: './sluice-data' });
 * await server.listen();
 * const rls = new RateLimitService({ configDir: './ratelimit', backend: new LmdbBackend(server.stateDb) });
 * await rls.listen();
 */
export class RateLimitService {
  readonly stats: RlsStats;
  private readonly server: GrpcHttp2Server;
  private readonly protos: LoadedProtos;
  private readonly directory: ConfigDirectory;
  private readonly decide: DecideOptions;
  private readonly log: (event: string, fields: Record<string, unknown>) => void;
  private readonly watchers = new Set<ServerStreamCall>();
  private serving = false;
  private closing: Promise<void> | undefined;
  private boundPort = 0;

  constructor(private readonly options: RateLimitServiceOptions) {
    const log = options.log ?? (() => {});
    this.log = (event, fields) => {
      try {
        log(event, fields);
      } catch {
        // A failing logger must not fail a call.
      }
    };
    const headers = options.responseHeaders;
    this.decide = {
      maxDescriptors: positive('maxDescriptors', options.maxDescriptors, 1000),
      maxEntries: positive('maxEntries', options.maxEntries, 64),
      shadowMode: options.shadowMode ?? false,
      headers:
        headers === undefined || headers === false
          ? undefined
          : {
              limit: (headers === true ? undefined : headers.limit) ?? 'RateLimit-Limit',
              remaining: (headers === true ? undefined : headers.remaining) ?? 'RateLimit-Remaining',
              reset: (headers === true ? undefined : headers.reset) ?? 'RateLimit-Reset',
            },
    };
    const ratio = options.nearLimitRatio ?? 0.8;
    if (!(ratio > 0 && ratio <= 1)) {
      throw new SluiceError(ErrorCode.INVALID_OPTION, `nearLimitRatio must be in (0, 1]; got ${ratio}`, {
        option: 'nearLimitRatio',
        value: ratio,
      });
    }
    this.stats = new RlsStats(ratio, positive('maxStatsKeys', options.maxStatsKeys, 10_000));
    this.directory = new ConfigDirectory(options.configDir, (event, fields) => this.log(event, fields));
    const maxMessage = positive('maxMessageBytes', options.maxMessageBytes, 4 * 1024 * 1024);
    const protos = loadProtos();
    this.protos = protos;
    const methods = new Map<string, GrpcMethod>([
      [
        `/${RLS_SERVICE_NAME}/ShouldRateLimit`,
        { kind: 'unary', framed: true, handle: (message) => this.shouldRateLimit(message) },
      ],
      [
        `/${HEALTH_SERVICE_NAME}/Check`,
        {
          kind: 'unary',
          handle: async (message) => {
            const { service } = protos.healthRequest.decode(message);
            if (!this.known(service)) {
              throw new GrpcError(GrpcStatus.NOT_FOUND, `unknown service ${JSON.stringify(service)}`);
            }
            return protos.healthResponse.encode({ status: this.health() });
          },
        },
      ],
      [
        `/${HEALTH_SERVICE_NAME}/Watch`,
        {
          kind: 'server-stream',
          handle: (message, call) => {
            const { service } = protos.healthRequest.decode(message);
            call.write(
              protos.healthResponse.encode({
                status: this.known(service) ? this.health() : HEALTH.SERVICE_UNKNOWN,
              }),
            );
            this.watchers.add(call);
            call.onClose(() => this.watchers.delete(call));
          },
        },
      ],
    ]);
    this.server = new GrpcHttp2Server(methods, maxMessage);
  }

  /** The config now serving. */
  get config() {
    return this.directory.config;
  }

  get port(): number {
    return this.boundPort;
  }

  /** Loads the config directory again now (also done on change); false when refused. */
  reload(): boolean {
    return this.directory.reload();
  }

  /**
   * The per-descriptor counters, by stats key (at most `maxStatsKeys` of them); observed by
   * @sluice/otel's `new SluiceMetrics({ rls: { name: service } })`.
   */
  counters(): Record<string, DescriptorCounters> {
    return this.stats.snapshot();
  }

  /** Descriptor decisions left uncounted: their stats key was new and `maxStatsKeys` were kept. */
  get droppedStats(): number {
    return this.stats.droppedKeys;
  }

  private known(service: string): boolean {
    return service === '' || service === RLS_SERVICE_NAME;
  }

  private health(): number {
    return this.serving ? HEALTH.SERVING : HEALTH.NOT_SERVING;
  }

  private setServing(serving: boolean): void {
    this.serving = serving;
    const message = this.protos.healthResponse.encode({ status: this.health() });
    for (const w of this.watchers) w.write(message);
  }

  private async shouldRateLimit(message: Buffer): Promise<Uint8Array> {
    const request = decodeRateLimitRequest(message);
    let response: RateLimitResponse;
    try {
      response = await shouldRateLimit(
        request,
        this.directory.config,
        this.options.backend,
        this.stats,
        this.decide,
      );
    } catch (err) {
      if (err instanceof BadRequest) throw new GrpcError(GrpcStatus.INVALID_ARGUMENT, err.message);
      this.log('decide-error', { backend: this.options.backend.name, error: (err as Error).message });
      throw new GrpcError(GrpcStatus.UNAVAILABLE, `rate limit backend failed: ${(err as Error).message}`);
    }
    return encodeRateLimitResponse(response, true);
  }

  /** Binds and starts serving; resolves with the bound port. */
  async listen(): Promise<number> {
    const host = this.options.host ?? '127.0.0.1';
    const port = await this.server.listen(host, this.options.port ?? 8081);
    this.boundPort = port;
    if (this.options.watch !== false) this.directory.watch(this.options.reloadDelay ?? 200);
    this.setServing(true);
    this.log('rls-listening', {
      host,
      port,
      configDir: this.options.configDir,
      backend: this.options.backend.name,
    });
    return port;
  }

  /**
   * Stops: health turns NOT_SERVING, no new call is taken, the calls in flight are answered
   * (cancelled past `closeTimeout`), the config watcher stops.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.setServing(false);
      for (const w of this.watchers) w.end();
      this.watchers.clear();
      this.directory.close();
      await this.server.close(this.options.closeTimeout ?? 10_000);
      this.log('rls-stopped', { port: this.boundPort });
    })();
    return this.closing;
  }
}

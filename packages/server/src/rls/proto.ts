import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import protobuf from 'protobufjs';
import { GrpcError, GrpcStatus } from './grpc-frames.js';
import type { RateLimitRequest, RateLimitResponse } from './should-rate-limit.js';

/**
 * The package's own .proto files (packages/server/proto, shipped in the tarball): Envoy's rate
 * limit service and the gRPC health protocol, as written from their published definitions.
 * Found through the package's own name, the same from src/ (tests) and from dist/.
 */
export function protoDir(): string {
  return join(dirname(createRequire(import.meta.url).resolve('@sluice/server/package.json')), 'proto');
}

/**
 * How messages are read: proto field names, enums and 64-bit integers as numbers, absent fields
 * as their defaults (empty arrays, null messages). The options @grpc/proto-loader was given when
 * it read them, so the objects the service sees are the ones it saw then.
 */
export const LOADER_OPTIONS = {
  keepCase: true,
  longs: Number,
  enums: Number,
  defaults: true,
  oneofs: true,
} as const;

/** One message type: bytes to the object the service reads, the object it writes to bytes. */
export interface MessageCodec<In, Out = In> {
  /** A malformed message is a GrpcError (INTERNAL). */
  decode(bytes: Uint8Array): In;
  encode(value: Out): Uint8Array;
}

export interface LoadedProtos {
  readonly rateLimitRequest: MessageCodec<RateLimitRequest>;
  readonly rateLimitResponse: MessageCodec<RateLimitResponse>;
  readonly healthRequest: MessageCodec<{ service: string }>;
  readonly healthResponse: MessageCodec<{ status: number }>;
}

let loaded: LoadedProtos | undefined;

function codec<T>(root: protobuf.Root, name: string): MessageCodec<T> {
  const type = root.lookupType(name);
  return {
    decode(bytes) {
      let message: protobuf.Message;
      try {
        message = type.decode(bytes);
      } catch (err) {
        throw new GrpcError(
          GrpcStatus.INTERNAL,
          `could not deserialize the ${type.name} message: ${(err as Error).message}`,
        );
      }
      return type.toObject(message, LOADER_OPTIONS) as T;
    },
    // fromObject first, as proto-loader's serializer did: it coerces what encode alone would not.
    encode: (value) => type.encode(type.fromObject(value as Record<string, unknown>)).finish(),
  };
}

/** Loads both services' messages once per process. */
export function loadProtos(): LoadedProtos {
  if (loaded !== undefined) return loaded;
  const dir = protoDir();
  const root = new protobuf.Root();
  // google/protobuf/*.proto come bundled with protobufjs; the rest from the package's proto/.
  root.resolvePath = (_origin, target) =>
    target.startsWith('google/protobuf/') ? target : join(dir, target);
  root.loadSync(['envoy/service/ratelimit/v3/rls.proto', 'grpc/health/v1/health.proto'], {
    keepCase: LOADER_OPTIONS.keepCase,
  });
  root.resolveAll();
  loaded = {
    rateLimitRequest: codec(root, 'envoy.service.ratelimit.v3.RateLimitRequest'),
    rateLimitResponse: codec(root, 'envoy.service.ratelimit.v3.RateLimitResponse'),
    healthRequest: codec(root, 'grpc.health.v1.HealthCheckRequest'),
    healthResponse: codec(root, 'grpc.health.v1.HealthCheckResponse'),
  };
  return loaded;
}

import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { GrpcObject, ServiceClientConstructor } from '@grpc/grpc-js';
import { loadPackageDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

/**
 * The package's own .proto files (packages/server/proto, shipped in the tarball): Envoy's rate
 * limit service and the gRPC health protocol, as written from their published definitions.
 * Found through the package's own name, the same from src/ (tests) and from dist/.
 */
export function protoDir(): string {
  return join(dirname(createRequire(import.meta.url).resolve('@sluice/server/package.json')), 'proto');
}

/** How messages are read and written: proto field names, enums and 64-bit integers as numbers. */
export const LOADER_OPTIONS = {
  keepCase: true,
  longs: Number,
  enums: Number,
  defaults: true,
  oneofs: true,
} as const;

export interface LoadedProtos {
  readonly rateLimitService: ServiceClientConstructor;
  readonly health: ServiceClientConstructor;
}

let loaded: LoadedProtos | undefined;

function at(root: GrpcObject, path: string): ServiceClientConstructor {
  let node: unknown = root;
  for (const part of path.split('.')) node = (node as Record<string, unknown>)[part];
  return node as ServiceClientConstructor;
}

/** Loads both services once per process. */
export function loadProtos(): LoadedProtos {
  if (loaded !== undefined) return loaded;
  const dir = protoDir();
  const definition = loadSync(['envoy/service/ratelimit/v3/rls.proto', 'grpc/health/v1/health.proto'], {
    ...LOADER_OPTIONS,
    includeDirs: [dir],
  });
  const root = loadPackageDefinition(definition);
  loaded = {
    rateLimitService: at(root, 'envoy.service.ratelimit.v3.RateLimitService'),
    health: at(root, 'grpc.health.v1.Health'),
  };
  return loaded;
}

export type { BackendAnswer, RlsBackend, RlsCall } from './backends.js';
export { LmdbBackend, StoreBackend } from './backends.js';
export type { RlsConfig, Rule } from './config.js';
export { loadConfigDirectory } from './config-directory.js';
export { protoDir } from './proto.js';
export type { RateLimitServiceOptions } from './rate-limit-service.js';
export { RateLimitService, RLS_SERVICE_NAME } from './rate-limit-service.js';
export type { DescriptorCounters } from './stats.js';

import * as ioredis5 from 'ioredis';
import * as ioredis6 from 'ioredis6';
import * as iovalkey from 'iovalkey';

/**
 * The Redis clients sluice supports, as users install them: the newest ioredis 5.x (`ioredis`),
 * ioredis 6 (`ioredis6`, an aliased devDependency) and iovalkey. The Redis suites run once per
 * family (`SLUICE_REDIS_CLIENT`, see vitest.config.ts); every family is typed as ioredis 5's
 * classes here because the suites use its API, which the three share.
 */
export const CLIENT_FAMILIES = {
  ioredis: { Redis: ioredis5.Redis, Cluster: ioredis5.Cluster },
  ioredis6: {
    Redis: ioredis6.Redis as unknown as typeof ioredis5.Redis,
    Cluster: ioredis6.Cluster as unknown as typeof ioredis5.Cluster,
  },
  iovalkey: {
    Redis: iovalkey.Redis as unknown as typeof ioredis5.Redis,
    Cluster: iovalkey.Cluster as unknown as typeof ioredis5.Cluster,
  },
} as const;

export type ClientFamilyName = keyof typeof CLIENT_FAMILIES;

/** The family under test: `SLUICE_REDIS_CLIENT`, or ioredis 5 when unset. Child processes inherit it. */
export const clientFamilyName: ClientFamilyName = (() => {
  const name = process.env.SLUICE_REDIS_CLIENT ?? 'ioredis';
  if (!(name in CLIENT_FAMILIES)) {
    throw new Error(
      `SLUICE_REDIS_CLIENT=${name}: expected one of ${Object.keys(CLIENT_FAMILIES).join(', ')}`,
    );
  }
  return name as ClientFamilyName;
})();

/** `new Redis(...)` of the family under test. */
export const Redis = CLIENT_FAMILIES[clientFamilyName].Redis;
/** `new Cluster(...)` of the family under test. */
export const Cluster = CLIENT_FAMILIES[clientFamilyName].Cluster;
export type Redis = InstanceType<typeof Redis>;
export type Cluster = InstanceType<typeof Cluster>;

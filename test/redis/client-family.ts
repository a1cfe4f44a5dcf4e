import * as ioredis5 from 'ioredis';
import type { createClient, createCluster } from 'redis';

/** A family's client classes, typed as ioredis 5's. */
interface Family {
  Redis: typeof ioredis5.Redis;
  Cluster: typeof ioredis5.Cluster;
}

/**
 * The Redis clients sluice supports, as users install them: the newest ioredis 5.x (`ioredis`),
 * ioredis 6 (`ioredis6`, an aliased devDependency) and iovalkey. The Redis suites run once per
 * family (`SLUICE_REDIS_CLIENT`, see vitest.config.ts); every family is typed as ioredis 5's
 * classes here because the suites use its API, which the three share. Only the family under test
 * is loaded (and ioredis 5, the tests' own client): the app processes the tests start import this
 * module too, and loading the other clients as well cost each start about 0.4 s of CPU.
 */
export const CLIENT_FAMILIES = {
  ioredis: async (): Promise<Family> => ioredis5,
  ioredis6: async (): Promise<Family> => {
    const ioredis6 = await import('ioredis6');
    return {
      Redis: ioredis6.Redis as unknown as typeof ioredis5.Redis,
      Cluster: ioredis6.Cluster as unknown as typeof ioredis5.Cluster,
    };
  },
  iovalkey: async (): Promise<Family> => {
    const iovalkey = await import('iovalkey');
    return {
      Redis: iovalkey.Redis as unknown as typeof ioredis5.Redis,
      Cluster: iovalkey.Cluster as unknown as typeof ioredis5.Cluster,
    };
  },
  // node-redis: the tests keep their ioredis client for their own reads and writes; the store gets
  // a node-redis client to the same server(s) (see `storeClient`).
  'node-redis': async (): Promise<Family> => ioredis5,
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

/**
 * Whether what a suite does without the family's own client runs exactly as in project `ioredis`
 * (which runs every file on ioredis 5), so that running it here again repeats it to the letter:
 * anything on a memory store, on any family but ioredis; under node-redis also a store given the
 * tests' own clients (ioredis 5's) rather than `storeClient`'s twin. Such blocks are skipped here.
 */
export const repeatsIoredis = {
  /** A block with no Redis client at all (a memory store, in process). */
  withoutRedis: clientFamilyName !== 'ioredis',
  /** A store given the tests' own client directly (not `storeClient`): ioredis 5's under node-redis. */
  ownClient: clientFamilyName === 'node-redis',
};

const family = await CLIENT_FAMILIES[clientFamilyName]();
/** `new Redis(...)` of the family under test. */
export const Redis = family.Redis;
/** `new Cluster(...)` of the family under test. */
export const Cluster = family.Cluster;
export type Redis = InstanceType<typeof Redis>;
export type Cluster = InstanceType<typeof Cluster>;

type NodeRedis = ReturnType<typeof createClient> | ReturnType<typeof createCluster>;
/** node-redis (`redis` 6), loaded under its family only. */
const nodeRedis = clientFamilyName === 'node-redis' ? await import('redis') : undefined;
const nodeClients = new WeakMap<object, NodeRedis>();

/**
 * The client a test hands to `RedisStore`: the test's own client, or under the node-redis family a
 * node-redis client (`redis` 6, RESP3 as it defaults to) to the same server or Cluster, connected
 * now (calls before it is ready wait, as users' do) and closed when the test's client ends.
 */
export function storeClient<C extends Redis | Cluster>(client: C): C {
  if (clientFamilyName !== 'node-redis') return client;
  let node = nodeClients.get(client);
  if (node === undefined) {
    const made = client instanceof ioredis5.Cluster ? nodeCluster(client) : nodeStandalone(client as Redis);
    // The suites report Redis errors through the store; node-redis also emits them here.
    made.on('error', () => {});
    const connecting = made.connect().catch(() => {});
    client.once('end', () => {
      if (made.isOpen) made.destroy();
    });
    nodeClients.set(client, made);
    connected.set(client, connecting);
    node = made;
  }
  return node as unknown as C;
}

const connected = new WeakMap<object, Promise<unknown>>();

/**
 * Makes the store client of a connected test client ready too (the twin `storeClient` returns
 * under node-redis), so that a store made on it starts as one made on the test's client would.
 */
export async function storeClientReady(client: Redis | Cluster): Promise<void> {
  storeClient(client);
  await connected.get(client);
}

function nodeStandalone(client: Redis): NodeRedis {
  const { host, port, sentinels } = client.options;
  // node-redis reaches Sentinel through its own createSentinel: not part of this family's suites.
  if (sentinels) throw new Error('storeClient: a Sentinel client has no node-redis twin here');
  // As the README sets it up (and as the tests' ioredis clients run, offline queue off).
  return nodeRedis!.createClient({
    socket: { host: host ?? '127.0.0.1', port: port ?? 6379 },
    disableOfflineQueue: true,
  });
}

function nodeCluster(client: Cluster): NodeRedis {
  // ioredis keeps the nodes it was given as `startupNodes` (not in its public type).
  const nodes = (client as unknown as { startupNodes: { host: string; port: number }[] }).startupNodes;
  return nodeRedis!.createCluster({
    rootNodes: nodes.map(({ host, port }) => ({ socket: { host, port } })),
    defaults: { disableOfflineQueue: true },
  });
}

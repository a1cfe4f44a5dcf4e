import type { RedisClient, RedisNodeClient } from './client.js';

/**
 * Cluster node connections are opened lazily, by the first command routed to each node. Since
 * ioredis 5.11 (and in 6), a Cluster created with `enableOfflineQueue: false` rejects a command
 * routed to a node that is still connecting, then retries it after `retryDelayOnFailover`
 * (100 ms) and a slot map refresh: every call of the first burst but one per node took ~120 ms,
 * past the store's default timeout, and failed open. So the store opens the primaries as soon as
 * the Cluster knows them, and calls wait (within their timeout) for those still being opened.
 */
interface ClusterState {
  /** True while every primary was ready when last looked at and no node was added since. */
  ready: boolean;
  /** The wait the calls share while some primary is connecting. */
  pending: Promise<void> | undefined;
}

const states = new WeakMap<RedisClient, ClusterState>();

/** Statuses a node leaves by itself for `ready` (or for a failure that ends the wait). */
const OPENING = new Set(['wait', 'connecting', 'connect']);

/**
 * Opens the Cluster's primaries as soon as it is ready (now, or on its next 'ready'), and any node
 * it adds later ('+node', after a failover or a slot move), so that the first calls find them
 * open. Once per client, however many stores share it. Nothing on a standalone client.
 */
export function watchClusterNodes(client: RedisClient): void {
  stateOf(client);
}

function stateOf(client: RedisClient): ClusterState | undefined {
  if (!client.isCluster || client.nodes === undefined) return undefined;
  let state = states.get(client);
  if (state === undefined) {
    const created: ClusterState = { ready: false, pending: undefined };
    client.on('+node', (...args: unknown[]) => {
      created.ready = false;
      open(args[0] as RedisNodeClient);
    });
    client.on('ready', () => {
      created.ready = false;
      for (const node of client.nodes?.('master') ?? []) open(node);
    });
    if (client.status === 'ready') for (const node of client.nodes('master')) open(node);
    states.set(client, created);
    state = created;
  }
  return state;
}

/**
 * Undefined when a call may be sent at once (a standalone client, a Cluster not ready yet, or
 * every primary ready); else a promise that resolves when the primaries being opened are ready or
 * have failed (a failed node then fails the call as ioredis reports it). Never rejects.
 */
export function clusterNodesReady(client: RedisClient): Promise<void> | undefined {
  const state = stateOf(client);
  if (state === undefined || state.ready || client.status !== 'ready') return undefined;
  if (state.pending !== undefined) return state.pending;
  const opening = client.nodes!('master').filter((node) => OPENING.has(node.status));
  if (opening.length === 0) {
    state.ready = true;
    return undefined;
  }
  state.pending = Promise.all(opening.map(opened)).then(() => {
    state.pending = undefined;
  });
  return state.pending;
}

function open(node: RedisNodeClient): void {
  // A rejected connect is reported by the node's 'error' event and by the calls routed to it.
  if (node.status === 'wait') node.connect().catch(() => {});
}

/** Resolves when `node` is ready or has stopped trying. */
function opened(node: RedisNodeClient): Promise<void> {
  open(node);
  if (!OPENING.has(node.status)) return Promise.resolve();
  return new Promise((resolve) => {
    const events = ['ready', 'close', 'end'] as const;
    const done = (): void => {
      for (const event of events) node.removeListener(event, done);
      resolve();
    };
    for (const event of events) node.once(event, done);
  });
}

import type { Decision, LimitCall, Store } from '@sluice/core';
import {
  chargeIn,
  checkIn,
  peekIn,
  type StateDb,
  type StateWriter,
  storedIdOfText,
} from '@sluice/host/state';
import { specOf } from '../algorithm-spec.js';

/** One descriptor's limit, as the service hands it to a backend. */
export interface RlsCall {
  readonly call: LimitCall;
  /** Look only (a descriptor's `hits_addend` of 0): nothing is taken. */
  readonly peek: boolean;
  /** envoyproxy/ratelimit's fixed window: a refused request still fills the window (see Rule.countsRefused). */
  readonly countsRefused: boolean;
}

/** The decisions, one per call in order, and the time they were made at (ms since the epoch). */
export interface BackendAnswer {
  readonly decisions: Decision[];
  readonly now: number;
}

/**
 * Where the rate limit service keeps its counters. `allOrNothing`: the calls that take are one
 * batch (core's all-or-nothing rule: if one refuses, none takes); otherwise each is decided on
 * its own, as envoyproxy/ratelimit does.
 */
export interface RlsBackend {
  readonly name: string;
  decide(calls: readonly RlsCall[], allOrNothing: boolean): Promise<BackendAnswer>;
}

/** Each algorithm's prefix, built once: a rule's algorithm lives as long as its config. */
const prefixes = new WeakMap<LimitCall['algorithm'], string>();

/** A call's stored key in the server's LMDB: its algorithm with every parameter, then the descriptor. */
export function lmdbId(call: LimitCall): string {
  let prefix = prefixes.get(call.algorithm);
  if (prefix === undefined) {
    prefix = `rls:${specOf(call.algorithm)}`;
    prefixes.set(call.algorithm, prefix);
  }
  return storedIdOfText(prefix, call.key);
}

/** Takes what a refused call had room for, so the window reads full as envoyproxy/ratelimit's does. */
function saturate(tx: StateWriter, call: LimitCall, id: string, now: number): void {
  chargeIn(tx, { calls: [call], ids: [id], now, storeNow: now });
}

/**
 * The server's own LMDB (the state the RESP commands use), one job in the turn's transaction per
 * request: the request's descriptors are decided together, at the transaction's clock.
 */
export class LmdbBackend implements RlsBackend {
  readonly name = 'lmdb';

  constructor(private readonly db: StateDb) {}

  async decide(calls: readonly RlsCall[], allOrNothing: boolean): Promise<BackendAnswer> {
    const ids: string[] = new Array(calls.length);
    for (let i = 0; i < calls.length; i++) ids[i] = lmdbId(calls[i]!.call);
    const queued = this.db.enqueue(ids, (tx) => {
      const now = tx.now;
      const decisions: Decision[] = new Array(calls.length);
      // Looks first: a descriptor's hits_addend 0 sees the counters as the request found them.
      for (let i = 0; i < calls.length; i++) {
        const c = calls[i]!;
        if (c.peek) decisions[i] = peekIn(tx, { calls: [c.call], ids: [ids[i]!], now, storeNow: now })[0]!;
      }
      if (allOrNothing) {
        const taking: number[] = [];
        for (let i = 0; i < calls.length; i++) if (!calls[i]!.peek) taking.push(i);
        if (taking.length > 0) {
          const batch = checkIn(tx, {
            calls: taking.map((i) => calls[i]!.call),
            ids: taking.map((i) => ids[i]!),
            now,
            storeNow: now,
          });
          taking.forEach((i, j) => {
            decisions[i] = batch[j]!;
          });
        }
      } else {
        for (let i = 0; i < calls.length; i++) {
          const c = calls[i]!;
          if (c.peek) continue;
          const d = checkIn(tx, { calls: [c.call], ids: [ids[i]!], now, storeNow: now })[0]!;
          if (!d.allowed && c.countsRefused) saturate(tx, c.call, ids[i]!, now);
          decisions[i] = d;
        }
      }
      return { decisions, now };
    });
    await queued.done;
    if (queued.error !== undefined) throw queued.error;
    return queued.result!;
  }
}

/**
 * Any core Store: RedisStore (Redis or Redis Cluster, so that service replicas share the counters)
 * above all. When the store's failure policy answers `'store-unavailable'` (RedisStore's
 * `failurePolicy: 'allow'` or `'deny'`), the call fails (gRPC UNAVAILABLE) and Envoy's
 * `failure_mode_deny` decides; with `'local'` the replica's own memory answers instead.
 */
export class StoreBackend implements RlsBackend {
  readonly name: string;

  constructor(
    private readonly store: Store,
    private readonly clock: () => number,
    name = 'store',
  ) {
    this.name = name;
  }

  async decide(calls: readonly RlsCall[], allOrNothing: boolean): Promise<BackendAnswer> {
    const now = this.clock();
    const decisions: Decision[] = new Array(calls.length);
    const peeks: number[] = [];
    const taking: number[] = [];
    calls.forEach((c, i) => {
      (c.peek ? peeks : taking).push(i);
    });
    const looked =
      peeks.length === 0
        ? []
        : await this.store.peek(
            peeks.map((i) => calls[i]!.call),
            now,
          );
    peeks.forEach((i, j) => {
      decisions[i] = looked[j]!;
    });
    if (allOrNothing && taking.length > 0) {
      const batch = await this.store.consume(
        taking.map((i) => calls[i]!.call),
        now,
      );
      taking.forEach((i, j) => {
        decisions[i] = batch[j]!;
      });
    } else {
      await Promise.all(
        taking.map(async (i) => {
          const c = calls[i]!;
          const d = (await this.store.consume([c.call], now))[0]!;
          if (!d.allowed && c.countsRefused && this.store.charge !== undefined) {
            await this.store.charge([c.call], now);
          }
          decisions[i] = d;
        }),
      );
    }
    // The store's failure policy answered ('allow' / 'deny'), not Redis: a call that failed at once
    // was not counted; one that timed out may still run in Redis when it gets there. Envoy decides
    // what that means (failure_mode_deny), as it does when envoyproxy/ratelimit loses Redis.
    if (decisions.some((d) => d.reason === 'store-unavailable')) {
      throw new Error(`${this.name} did not answer (a call that timed out may still be counted)`);
    }
    return { decisions, now };
  }
}

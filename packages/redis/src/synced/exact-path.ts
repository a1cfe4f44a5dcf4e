import type { Decision, LimitCall } from '@sluice/core';
import type { CallGate } from '@sluice/core/gate';
import { RedisStore } from '../redis-store.js';
import type { Entry } from './local-table.js';
import type { ResolvedSyncedOptions } from './options.js';
import type { SyncLoop } from './sync-loop.js';
import type { SyncQueue } from './sync-queue.js';

/**
 * `exactAbove`'s path: a decision near the limit, made in Redis rather than on this node's view.
 * A sync first (this key's consumption reaches Redis), then `RedisStore`'s script on the same key;
 * if Redis fails, the local view decides (and its units are queued, as a local admission's are).
 */
export class ExactPath {
  private store: RedisStore | undefined;

  constructor(
    private readonly options: ResolvedSyncedOptions,
    private readonly gate: CallGate,
    private readonly loop: SyncLoop,
    private readonly queue: SyncQueue,
  ) {}

  async decide(entry: Entry, call: LimitCall, at: number, now: number | undefined): Promise<Decision> {
    await this.loop.sync();
    const { client, prefix, clock, timeout, readyTimeout } = this.options.redis;
    // The store's own bounds and report (this store's onError and log): an exact decision waits
    // no longer than a sync would.
    this.store ??= new RedisStore({
      client,
      prefix,
      clock,
      timeout,
      readyTimeout,
      onError: (event) => this.gate.report(event.operation, event.keys, event.error),
      logger: false,
      failurePolicy: 'deny',
      breaker: false,
    });
    const [decision] = await this.store.consume([call], now);
    const step = call.algorithm.consume(entry.view, at, call.cost, call.policy);
    if (decision!.reason === 'store-unavailable') {
      if (step.decision.allowed) {
        entry.view = step.state;
        entry.delta = entry.space.rule.add(entry.delta, step.state, at, call.cost);
        this.queue.add(entry);
      }
      return step.decision;
    }
    // Redis counted it: the view takes it (it is not sent again).
    if (decision!.allowed && step.decision.allowed) entry.view = step.state;
    return decision!;
  }

  async shutdown(): Promise<void> {
    await this.store?.shutdown();
  }
}

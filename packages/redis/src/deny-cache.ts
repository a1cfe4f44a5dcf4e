import type { Decision, LimitCall, RefusalReason } from '@sluice/core';
import { ceilMs, decide } from '@sluice/core/adapter';

interface Entry {
  /** Local time until which the limit refuses `cost` or more. */
  readonly until: number;
  readonly cost: number;
  readonly at: number;
  readonly decision: Decision;
  /** `'blocked'` for a limit with a block (its refusal started one, or it was blocked). */
  readonly reason: RefusalReason;
}

/**
 * Remembers limits that refused: a `(limit, key)` refused for cost c until T refuses any cost ≥ c
 * until T (every algorithm only gets more permissive with time, and a larger cost never fits
 * sooner), so those requests are refused locally without a round trip. A blocked key refuses any
 * cost until its block ends, so its whole block is answered here. Bounded: the least recently
 * refused entry goes first.
 */
export class DenyCache {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly maxKeys: number) {}

  /** The local refusal of `call` at `now`, or undefined when Redis must decide. */
  lookup(call: LimitCall, now: number): Decision | undefined {
    const id = idOf(call);
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    if (now >= entry.until || now < entry.at) {
      this.entries.delete(id);
      return undefined;
    }
    if (call.cost < entry.cost) return undefined;
    const d = entry.decision;
    return decide(
      false,
      d.limit,
      d.remaining,
      Math.max(0, ceilMs(d.resetAfter - (now - entry.at))),
      ceilMs(entry.until - now),
      0,
      call.policy,
      entry.reason,
    );
  }

  /** Remembers a refusal Redis gave, when caching it is sound. */
  remember(call: LimitCall, now: number, decision: Decision): void {
    if (decision.retryAfter <= 0) return;
    // A blocked key: any cost is refused until the block ends (the algorithm does not run, so a
    // strict bucket's clock is not at stake), and `retryAfter` is exactly that end.
    const blocked = decision.reason === 'blocked';
    if (!blocked) {
      // The refusal that starts a block is not kept: its wait is the block's or the algorithm's,
      // whichever is longer, and past the block Redis may start another. The next request asks
      // Redis once and is answered 'blocked', which is kept.
      if (decision.reason !== 'rate-limited' || call.block !== undefined) return;
      // A strict token bucket restarts its clock on every refusal, so answering locally would
      // let the caller in earlier than Redis would.
      if (call.algorithm.kind === 'token-bucket' && call.algorithm.params.strict === 1) return;
    }
    const id = idOf(call);
    this.entries.delete(id);
    this.entries.set(id, {
      until: now + decision.retryAfter,
      cost: blocked ? 1 : call.cost,
      at: now,
      decision,
      reason: blocked ? 'blocked' : 'rate-limited',
    });
    if (this.entries.size > this.maxKeys) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
  }

  /**
   * The local answer to `calls` at `now` when any of them is remembered refused (limits not
   * consulted are reported as allowed with nothing known left, remaining 0); else undefined.
   */
  refuse(calls: readonly LimitCall[], now: number): Decision[] | undefined {
    let refused = false;
    const decisions = calls.map((call) => {
      const decision = this.lookup(call, now);
      if (decision !== undefined) refused = true;
      return decision;
    });
    if (!refused) return undefined;
    return decisions.map(
      (decision, i) =>
        decision ?? decide(true, calls[i]!.algorithm.limit, 0, 0, 0, 0, calls[i]!.policy, undefined),
    );
  }

  /** Remembers the refusals among `decisions` (Redis's answer to `calls`); `now` read only if any. */
  rememberAll(calls: readonly LimitCall[], decisions: readonly Decision[], now: () => number): void {
    let at: number | undefined;
    for (let i = 0; i < calls.length; i++) {
      // A shadow limit's refusal refuses nothing: it must not be answered locally.
      if (decisions[i]!.allowed || calls[i]!.shadow === true) continue;
      at ??= now();
      this.remember(calls[i]!, at, decisions[i]!);
    }
  }

  forget(call: Pick<LimitCall, 'algorithm' | 'key'>): void {
    this.entries.delete(idOf(call));
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}

// The fingerprint is base 36 (no ':'), so this id is injective.
function idOf(call: Pick<LimitCall, 'algorithm' | 'key'>): string {
  return `${call.algorithm.fingerprint}:${call.key}`;
}

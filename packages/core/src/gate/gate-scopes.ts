import { type BreakerState, CircuitBreaker } from './breaker.js';
import { FailureLog, type FailureLogNames, policyText } from './failure-log.js';
import type { ResolvedFailureOptions } from './failure-options.js';

/** What fails together: one breaker and one failure log. */
export interface GateScope {
  /** The Cluster node (`host:port`) this scope covers; undefined: the whole backend. */
  readonly node: string | undefined;
  readonly breaker: CircuitBreaker | undefined;
  readonly log: FailureLog | undefined;
}

/** The primary that owns a hash slot (`host:port`), or undefined while the slot map is unknown. */
export type SlotOwner = (slot: number) => string | undefined;

export interface ScopeOptions
  extends Pick<
    ResolvedFailureOptions,
    'breaker' | 'logger' | 'onBreakerChange' | 'failurePolicy' | 'outageShare'
  > {
  readonly clock: () => number;
  /** The store and its backend, for the log's lines (its backend is named per node on a Cluster). */
  readonly names: { readonly store: string; readonly backend: string };
  /** The log's words for the policy, when the store answers its own way. @default the failure policy's */
  readonly policyText?: string | undefined;
  /** On a Cluster, the owner of each slot; undefined on a standalone backend (one scope). */
  readonly owner?: SlotOwner | undefined;
}

/** Node scopes kept at most (a Cluster's primaries, and those replaced by failovers); closed ones go first. */
const MAX_NODES = 64;

/**
 * The breakers and failure logs of a store, one per Cluster primary (following the slot map: after
 * a failover the promoted replica gets a scope of its own, closed), so that one shard down is
 * answered by the failure policy for that shard's keys only, while every other shard's keys still
 * go to the backend. A standalone backend, or a call whose slot owner is not known yet, has one scope.
 */
export class GateScopes {
  readonly whole: GateScope;
  private readonly nodes = new Map<string, GateScope>();
  /** The failure log's words. */
  private readonly names: FailureLogNames;

  constructor(private readonly options: ScopeOptions) {
    const { failurePolicy, outageShare, names } = options;
    this.names = {
      ...names,
      policy:
        options.policyText ??
        policyText(typeof failurePolicy === 'object' ? 'store' : failurePolicy, outageShare),
    };
    this.whole = this.make(undefined);
  }

  /** The scope of a call on `slot` (undefined: a call that is not on one slot, or standalone). */
  of(slot: number | undefined): GateScope {
    const owner = this.options.owner;
    if (slot === undefined || owner === undefined) return this.whole;
    const node = owner(slot);
    if (node === undefined) return this.whole;
    let scope = this.nodes.get(node);
    if (scope === undefined) {
      if (this.nodes.size >= MAX_NODES) this.prune();
      scope = this.make(node);
      this.nodes.set(node, scope);
    }
    return scope;
  }

  /** The worst breaker state of the scopes (`'open'` if one node's is); `'closed'` with no breaker. */
  worstState(): BreakerState {
    let worst: BreakerState = 'closed';
    for (const scope of [this.whole, ...this.nodes.values()]) {
      const state = scope.breaker?.state ?? 'closed';
      if (state === 'open') return 'open';
      if (state === 'half-open') worst = state;
    }
    return worst;
  }

  private make(node: string | undefined): GateScope {
    const { clock, breaker, logger, onBreakerChange } = this.options;
    const names = this.names;
    const log =
      logger === undefined
        ? undefined
        : new FailureLog(
            logger,
            clock,
            node === undefined ? names : { ...names, backend: `${names.backend} node ${node}` },
          );
    const made: GateScope = {
      node,
      log,
      breaker:
        breaker === undefined
          ? undefined
          : new CircuitBreaker(breaker.failures, breaker.cooldown, clock, (state, previous) => {
              log?.breaker(state, previous, breaker.failures, breaker.cooldown);
              onBreakerChange?.(state, previous, node);
            }),
    };
    return made;
  }

  /** Forgets node scopes with nothing to remember (breaker closed, not failing). */
  private prune(): void {
    for (const [node, scope] of this.nodes) {
      if ((scope.breaker?.state ?? 'closed') === 'closed' && scope.log?.failing !== true)
        this.nodes.delete(node);
    }
    // All of them failing: the oldest goes (a bound, not a policy).
    if (this.nodes.size >= MAX_NODES) this.nodes.delete(this.nodes.keys().next().value as string);
  }
}

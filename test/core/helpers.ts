import type { Algorithm, Decision } from '@sluice/core';
import { type DecisionFields, fields } from '../suites/store-behaviour.js';

export { allow, type DecisionFields, fields, refuse } from '../suites/store-behaviour.js';

/** An epoch-scale instant (a whole hour), so float rounding behaves as in production. */
export const T0 = 1_699_999_200_000;

/** A pure algorithm with its state threaded through: what a store does, without a store. */
export class Run<S> {
  state: S | undefined;
  constructor(
    readonly algorithm: Algorithm<S>,
    readonly base = T0,
  ) {}

  /** `check` at `base + at`: consumes, keeps the new state, returns the decision's fields. */
  at(at: number, cost = 1): DecisionFields {
    return fields(this.decide(at, cost));
  }

  decide(at: number, cost = 1): Decision {
    const step = this.algorithm.consume(this.state, this.base + at, cost, this.algorithm.kind);
    this.state = step.state;
    return step.decision;
  }

  peek(at: number, cost = 1): DecisionFields {
    return fields(this.algorithm.peek(this.state, this.base + at, cost, this.algorithm.kind));
  }

  /** A copy that continues from the same state (to try "what if" without touching this run). */
  fork(): Run<S> {
    const copy = new Run(this.algorithm, this.base);
    copy.state = this.state;
    return copy;
  }
}

import type { BreakerState } from '@sluice/redis';
import {
  CallGate,
  FailureAnswers,
  LeaseFailureAnswers,
  type ResolvedFailureOptions,
} from '@sluice/redis/gate';
import type { Redis } from 'ioredis';

/**
 * The failure handling of one sluice-server's client: RedisStore's gate (timeout, start-up wait,
 * breaker, `onError`) and what its failure policy answers for limits and leases. One per server,
 * so that one server down does not open the breaker of the others.
 */
export interface Guard {
  readonly gate: CallGate;
  readonly answers: FailureAnswers;
  readonly leases: LeaseFailureAnswers;
}

export function guardFor(client: Redis, failure: ResolvedFailureOptions, clock: () => number): Guard {
  const gate = new CallGate({
    ...failure,
    client,
    clock,
    names: { store: 'ServerStore', backend: 'sluice-server' },
  });
  return {
    gate,
    answers: new FailureAnswers(failure, gate),
    leases: new LeaseFailureAnswers(failure, gate, clock, 'ServerStore'),
  };
}

const ORDER: readonly BreakerState[] = ['closed', 'half-open', 'open'];

/** The worst of the guards' breaker states. */
export function worstState(guards: readonly Guard[]): BreakerState {
  let worst = 0;
  for (const guard of guards) worst = Math.max(worst, ORDER.indexOf(guard.gate.state));
  return ORDER[worst]!;
}

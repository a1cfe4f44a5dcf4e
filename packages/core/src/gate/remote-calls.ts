import { CallGate, type GateOptions } from './call-gate.js';
import { FailureAnswers } from './failure-answers.js';
import type { ResolvedFailureOptions } from './failure-options.js';
import { LeaseFailureAnswers } from './lease-failure-answers.js';

/**
 * A store's failure handling for one client of its backend: the gate every call passes, and what
 * the failure policy answers for limits and for leases while the backend does not.
 */
export interface RemoteCalls {
  readonly gate: CallGate;
  readonly answers: FailureAnswers;
  readonly leases: LeaseFailureAnswers;
}

/**
 * The failure handling of one client: RedisStore makes one for its client, ServerStore one per
 * sluice-server (so that one server down does not open the others' breakers).
 */
export function remoteCalls(options: GateOptions & ResolvedFailureOptions): RemoteCalls {
  const gate = new CallGate(options);
  return {
    gate,
    answers: new FailureAnswers(options, gate),
    leases: new LeaseFailureAnswers(options, gate, options.clock, options.names.store),
  };
}

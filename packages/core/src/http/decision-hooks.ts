import type { Decision } from '../decision.js';
import type { ResolvedLimit } from '../limit-definitions.js';
import { functionOption } from '../validate.js';
import type { HttpLimitOptions } from './options.js';

type Hook<Req> = (req: Req, decision: Decision) => void;

/**
 * The hooks a rate-limit middleware calls for each decision it answers, in this order:
 * `onDecision` (every decision), `onBlocked` (a limit's refusal started a block), `onLimited`
 * (refused). A throwing hook goes to `report` and the others still run: metrics must never
 * change the answer.
 */
export class DecisionHooks<Req> {
  private readonly onDecision: Hook<Req> | undefined;
  private readonly onBlocked: Hook<Req> | undefined;
  private readonly onLimited: Hook<Req> | undefined;
  /** Names of the limits with a block: only their `'rate-limited'` refusals start one. */
  private readonly blocking: ReadonlySet<string>;

  constructor(
    options: Pick<HttpLimitOptions<Req>, 'onDecision' | 'onBlocked' | 'onLimited'>,
    limits: readonly Pick<ResolvedLimit, 'name' | 'block'>[],
    private readonly report: (error: unknown, req: Req) => void,
  ) {
    this.onDecision = functionOption('onDecision', options.onDecision);
    this.onBlocked = functionOption('onBlocked', options.onBlocked);
    this.onLimited = functionOption('onLimited', options.onLimited);
    this.blocking = new Set(limits.filter((limit) => limit.block !== undefined).map((limit) => limit.name));
  }

  run(req: Req, decision: Decision): void {
    if (this.onDecision !== undefined) this.call(this.onDecision, req, decision);
    if (this.onBlocked !== undefined && this.startsBlock(decision)) this.call(this.onBlocked, req, decision);
    if (this.onLimited !== undefined && !decision.allowed) this.call(this.onLimited, req, decision);
  }

  /** A block starts with its limit's own refusal (`'rate-limited'`); refusals during it are `'blocked'`. */
  private startsBlock(decision: Decision): boolean {
    if (this.blocking.size === 0) return false;
    const limits = decision.limits.length === 0 ? [decision] : decision.limits;
    return limits.some((d) => d.reason === 'rate-limited' && this.blocking.has(d.policy));
  }

  private call(hook: Hook<Req>, req: Req, decision: Decision): void {
    try {
      hook(req, decision);
    } catch (error) {
      this.report(error, req);
    }
  }
}

import { type Decision, withFields } from '../decision.js';
import type { MaybePromise } from '../store.js';
import type { GetHeader, SetHeader } from './headers.js';
import type { HttpLimiter } from './rate-limit.js';
import { RequestSlot } from './request-slot.js';

/**
 * What one rate-limit middleware took for a request it admitted: enough to give it back when a
 * later sluice middleware refuses the request (or its client leaves before it runs), and to say
 * so in the RateLimit headers already set.
 */
export class Taken<Ctx, Req> {
  constructor(
    readonly limiter: HttpLimiter<Req>,
    readonly req: Req,
    readonly ctx: Ctx,
    readonly decision: Decision,
    readonly set: SetHeader<Ctx>,
    readonly get: GetHeader<Ctx> | undefined,
  ) {}
}

type AnyTaken = Taken<unknown, unknown>;

/** Each request's takings, in the order its middlewares ran: one entry, or a list past one. */
const ledger = new RequestSlot<AnyTaken | AnyTaken[]>();

/** Records what a rate-limit middleware took for `req`, before the request goes on. */
export function took<Ctx, Req>(taken: Taken<Ctx, Req>): void {
  const req = taken.req as object;
  const earlier = ledger.get(req);
  const entry = taken as unknown as AnyTaken;
  if (earlier === undefined) ledger.set(req, entry);
  else if (Array.isArray(earlier)) earlier.push(entry);
  else ledger.set(req, [earlier, entry]);
}

/**
 * The all-or-nothing rule across a request's sluice middlewares, as within one: a request refused
 * by a later sluice middleware (a route's limit after the app-wide one, a concurrency limit, a
 * shedder), or whose client left before it ran, gives back what every earlier sluice rate limit
 * took for it (`Store.refund`; a store without it keeps the units). Their RateLimit headers are
 * rewritten first, so the refusal tells the quota the client has, as one layered middleware would.
 * Resolves once every store has the units back (so the next request sees them); never rejects.
 */
export function giveBackEarlier(req: unknown): MaybePromise<void> {
  const earlier = ledger.get(req);
  if (earlier === undefined) return;
  ledger.delete(req);
  const entries = Array.isArray(earlier) ? earlier : [earlier];
  // Where each middleware's lists extend the earlier ones' (an exchange that reads headers back),
  // the first rewrite replaces what is there and the others extend it; elsewhere the refusing
  // middleware's headers replace them anyway.
  let first = true;
  for (const { limiter, req, ctx, decision, set, get } of entries) {
    if (get === undefined) continue;
    const restored = given(decision, limiter.reservedUnits(req));
    if (limiter.writeHeaders(req, restored, ctx, set, first ? undefined : get)) first = false;
  }
  const refunds: Promise<number>[] = [];
  for (const { limiter, req } of entries) refunds.push(limiter.giveBack(req));
  return Promise.all(refunds).then(() => undefined);
}

/** `decision` with `units` given back to each limit that took them. */
function given(decision: Decision, units: number): Decision {
  if (units === 0) return decision;
  const back = (d: Decision): Decision =>
    d.allowed ? withFields(d, { remaining: Math.min(d.limit, d.remaining + units) }) : d;
  return withFields(back(decision), {}, decision.limits.map(back));
}

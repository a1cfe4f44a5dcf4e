import type { Algorithm } from '../algorithm.js';
import type { Decision } from '../decision.js';
import { describeValue, ErrorCode, SluiceError } from '../errors.js';
import type { Store } from '../store.js';
import type { LimitSet, Reservation } from './limit-set.js';
import type { ResponseOutcome } from './options.js';
import type { Reporter } from './reporter.js';
import { RequestSlot } from './request-slot.js';

/**
 * What each request a rate-limit middleware checked has reserved, kept on the request until its
 * units are settled, given back or its response's outcome is known: the units an admitted request
 * took, and the keys and algorithms (plans) they were taken on. Every way units go back or are
 * taken afterwards is here: `count` (the response's outcome), `settle` (the actual cost), and
 * the give-back of a request that never ran (its client left, a later middleware refused it).
 */
export class Reservations<Req> {
  private readonly slot = new RequestSlot<Reservation>();

  constructor(
    private readonly store: Store,
    private readonly set: LimitSet<Req>,
    private readonly reporter: Reporter<Req>,
    /** `count` as a predicate; `undefined`: every response counts. */
    private readonly counts: ((req: Req, outcome: ResponseOutcome) => boolean) | undefined,
  ) {}

  /** Keeps what a request was checked against; `cost` 0 for a refused one (its plans name its headers). */
  reserve(
    req: Req,
    keys: readonly (string | undefined)[],
    algorithms: readonly (Algorithm | undefined)[],
    cost: number,
  ): void {
    this.slot.set(req as object, { keys, algorithms, cost, admitted: cost > 0 });
  }

  get(req: Req): Reservation | undefined {
    return this.slot.get(req);
  }

  forget(req: Req): void {
    this.slot.delete(req);
  }

  /**
   * The response of an admitted request ended: under `count`, a response that does not count
   * gives its units back. A throwing `count` function is reported and the units stay counted.
   */
  outcome(req: Req, statusCode: number, finished: boolean): void {
    const reservation = this.slot.get(req);
    if (reservation === undefined || !reservation.admitted || this.counts === undefined) return;
    let counted: boolean;
    try {
      counted = this.counts(req, { statusCode, finished }) !== false;
    } catch (error) {
      this.reporter.error(error, req);
      return;
    }
    if (!counted) void this.giveBack(req);
  }

  /**
   * Settles an admitted request to its actual cost: the difference from what it reserved is given
   * back (`Store.refund`) or taken (`Store.charge`). See `HttpLimiter.settle`.
   */
  settle(req: Req, actual: number): Promise<void> {
    if (typeof actual !== 'number' || !Number.isSafeInteger(actual) || actual < 0) {
      throw new SluiceError(
        ErrorCode.INVALID_COST,
        `settle needs the actual cost, an integer ≥ 0; got ${describeValue(actual)}`,
        {
          option: 'actual',
          value: actual,
        },
      );
    }
    const reservation = this.slot.get(req);
    if (reservation === undefined || !reservation.admitted || actual === reservation.cost)
      return Promise.resolve();
    const delta = actual - reservation.cost;
    reservation.cost = actual;
    const store = this.store;
    return (async () => {
      try {
        if (delta < 0) await store.refund?.(this.set.calls(reservation, -delta), undefined);
        else await store.charge?.(this.set.calls(reservation, delta), undefined);
      } catch (error) {
        this.reporter.error(error, req);
      }
    })();
  }

  /**
   * The units an admitted request reserved that `giveBack` would return: 0 when it has none or
   * the store cannot give units back.
   */
  units(req: Req): number {
    const reservation = this.slot.get(req);
    if (reservation === undefined || !reservation.admitted || this.store.refund === undefined) return 0;
    return reservation.cost;
  }

  /**
   * Gives an admitted request's units back (on stores with `refund`): a held request whose client
   * left, a response that does not count, a later sluice middleware's refusal. Answers the units
   * given back; never rejects.
   */
  async giveBack(req: Req): Promise<number> {
    const reservation = this.slot.get(req);
    const store = this.store;
    if (reservation === undefined || !reservation.admitted || store.refund === undefined) return 0;
    this.slot.delete(req);
    const cost = reservation.cost;
    if (cost === 0) return 0;
    try {
      await store.refund(this.set.calls(reservation, cost), undefined);
      return cost;
    } catch (error) {
      this.reporter.error(error, req);
      return 0;
    }
  }

  /** A request whose client left before it was passed on: what it took is given back. */
  async abandon(req: Req, decision: Decision | undefined | null): Promise<null> {
    if (decision?.allowed === true) await this.giveBack(req);
    return null;
  }
}

/**
 * The one property sluice adds to a request object for its slots: a holder object, made by the
 * first slot set on that request. Each property added to a request costs like no other store:
 * Node's request objects share no hidden class (Express 5 on Node 20: 0 of 20,000 consecutive
 * requests did), so V8 makes a new one for every property added to every request, a runtime call
 * each time: about 38,000 instructions per property in an Express server (callgrind, the difference
 * of 3,000 and 1,500 requests; a whole bare Express request is about 880,000). The holders all
 * come from one place and take the slots' symbols in the same order, so they share their hidden
 * classes: a second slot on the same request is an ordinary store (issue 36).
 */
const HOLDER = Symbol('sluice.request');

type Holder = Record<symbol, unknown>;

/**
 * A value kept for each request under a symbol of its own, in the request's holder (above): what a
 * middleware remembers about a request until its response ends. A `WeakMap` keyed by requests did
 * the same at twice the cost of a whole memory-store check (V8's ephemeron bookkeeping for one
 * entry per request); the holder goes with the request.
 */
export class RequestSlot<T> {
  private readonly symbol = Symbol('sluice.slot');

  get(req: unknown): T | undefined {
    const holder = (req as Record<symbol, Holder | undefined>)[HOLDER];
    return holder === undefined ? undefined : (holder[this.symbol] as T | undefined);
  }

  set(req: unknown, value: T): void {
    const record = req as Record<symbol, Holder | undefined>;
    let holder = record[HOLDER];
    if (holder === undefined) {
      holder = {};
      record[HOLDER] = holder;
    }
    holder[this.symbol] = value;
  }

  delete(req: unknown): void {
    const holder = (req as Record<symbol, Holder | undefined>)[HOLDER];
    if (holder !== undefined && holder[this.symbol] !== undefined) holder[this.symbol] = undefined;
  }
}

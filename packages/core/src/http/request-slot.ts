/**
 * A value kept on each request object under a symbol of its own: what a middleware remembers about
 * a request until its response ends. A `WeakMap` keyed by requests did the same at twice the cost
 * of a whole memory-store check (V8's ephemeron bookkeeping for one entry per request); a symbol
 * property is one store on an object the framework made anyway, and it goes with the request.
 */
export class RequestSlot<T> {
  private readonly symbol = Symbol('sluice.reservation');

  get(req: unknown): T | undefined {
    return (req as Record<symbol, T | undefined>)[this.symbol];
  }

  set(req: unknown, value: T): void {
    (req as Record<symbol, T | undefined>)[this.symbol] = value;
  }

  delete(req: unknown): void {
    const record = req as Record<symbol, T | undefined>;
    if (record[this.symbol] !== undefined) record[this.symbol] = undefined;
  }
}

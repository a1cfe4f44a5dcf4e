/**
 * A key's state, boxed: a write to a key that is already there replaces `state` in its cell, so a
 * decision costs one map lookup and no `set` (the second hash of the key is a third of the cost
 * of a decision on a 10,000-key map).
 */
export interface Cell {
  /** The state, or `NUMBER` when it is one number (most algorithms): then it is in `number`. */
  state: unknown;
  /**
   * A one-number state. Only numbers are ever stored here, so V8 keeps the field as a double that
   * a write updates in place; a number written to `state` (which also holds arrays) would be a new
   * heap number on every decision (8% of the time in GC).
   */
  number: number;
  /** `bytesOf(key, state)`, kept so that a write or a removal can adjust the totals. */
  bytes: number;
}

/** `Cell.state` of a one-number state. */
export const NUMBER: unique symbol = Symbol('sluice.number');

export function cellState(cell: Cell): unknown {
  return cell.state === NUMBER ? cell.number : cell.state;
}

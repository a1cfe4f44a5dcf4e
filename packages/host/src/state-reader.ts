import type { StateEnv } from './state-env.js';

/** Reads the state stored for a key: inside a write transaction (StateTxn) or from the latest commit. */
export interface StateReader {
  /** The state of `id`, or `undefined` when there is none or it is as good as new at `now` (store time). */
  read(id: string, now: number): unknown;
}

/**
 * Reads from the latest committed snapshot, outside any write transaction: a reader never waits
 * for a writer, in this process or another (LMDB's MVCC). Used for peeks, which change nothing.
 */
export class SnapshotReader implements StateReader {
  constructor(private readonly env: StateEnv) {
    // lmdb-js keeps a read snapshot until the end of the event-loop turn: renew it so that the
    // reads see what every process has committed until now.
    env.root.resetReadTxn();
  }

  read(id: string, now: number): unknown {
    const value = this.env.state.get(Buffer.from(id, 'latin1'));
    return value === undefined || value[1] <= now ? undefined : value[0];
  }
}

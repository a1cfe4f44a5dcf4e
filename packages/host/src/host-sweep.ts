import type { ResolvedHostStoreOptions } from './host-store-options.js';
import type { StateDb } from './state-db.js';

type Log = (event: string, fields: Record<string, unknown>) => void;

/**
 * The expiry sweep of one process's HostStore: a bounded step every `sweepInterval` ms, or on the
 * next turn while a step finds a full batch (a flood of unique keys is removed as fast as it
 * expires, one batch per turn). Every process runs its own: there is no primary to run it, and a
 * step that finds nothing due is a short transaction. Each step also frees the reader slots of
 * processes that died (a killed worker's). The timer does not keep the process alive.
 */
export class HostSweep {
  private timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  private stopped = false;

  constructor(
    private readonly db: StateDb,
    private readonly options: Pick<ResolvedHostStoreOptions, 'sweepInterval' | 'sweepBatch' | 'clock'>,
    private readonly log: Log,
  ) {
    if (options.sweepInterval > 0) this.schedule(options.sweepInterval);
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    const next = () => this.schedule(this.step() ? 0 : this.options.sweepInterval);
    this.timer = delay === 0 ? setImmediate(next) : setTimeout(next, delay);
    this.timer.unref();
  }

  /** One step; whether it found a full batch (more may be waiting). */
  private step(): boolean {
    try {
      this.db.clearStaleReaders();
      return this.db.sweep(this.options.sweepBatch, this.options.clock()).visited >= this.options.sweepBatch;
    } catch (err) {
      this.log('sweep-error', { error: (err as Error).message });
      return false;
    }
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer as NodeJS.Timeout);
    clearImmediate(this.timer as NodeJS.Immediate);
    this.timer = undefined;
  }
}

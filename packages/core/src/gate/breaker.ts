/** `closed`: calls go to the backend (Redis, a sluice-server). `open`: calls fail fast. `half-open`: one probe call is let through. */
export type BreakerState = 'closed' | 'open' | 'half-open';

export interface BreakerOptions {
  /** Consecutive failed calls (transport errors or timeouts, not errors the backend replies about one call) that open the breaker. Integer ≥ 1. @default 5 */
  failures?: number;
  /** ms the breaker stays open before it lets one probe call through. @default 1000 */
  cooldown?: number;
}

/**
 * Stops paying the timeout on every call once the backend is known to be down: after `failures`
 * consecutive failures, calls fail fast for `cooldown` ms; then one probe goes through, and its
 * success closes the breaker (its failure reopens it for another cooldown).
 */
export class CircuitBreaker {
  private current: BreakerState = 'closed';
  private consecutive = 0;
  private openedAt = 0;
  private probing = false;

  constructor(
    private readonly failures: number,
    private readonly cooldown: number,
    private readonly clock: () => number,
    private readonly onChange: (state: BreakerState, previous: BreakerState) => void,
  ) {}

  get state(): BreakerState {
    return this.current;
  }

  /** Whether a call may go to the backend now. While half-open, one call at a time (the probe). */
  admit(): boolean {
    if (this.current === 'closed') return true;
    if (this.current === 'open') {
      if (this.clock() - this.openedAt < this.cooldown) return false;
      this.set('half-open');
    }
    if (this.probing) return false;
    this.probing = true;
    return true;
  }

  /** Whether a call now would be answered at once without going to the backend (open, or its probe is out). */
  blocking(): boolean {
    if (this.current === 'closed') return false;
    if (this.current === 'open') return this.clock() - this.openedAt < this.cooldown;
    return this.probing;
  }

  /**
   * A call succeeded. While open, that is a call let through before the breaker opened and
   * answered late: it does not close the breaker (only the probe does), or an in-flight success
   * would reopen the gate to a backend just seen failing, and it would flap.
   */
  success(): void {
    if (this.current === 'open') return;
    this.consecutive = 0;
    this.probing = false;
    if (this.current !== 'closed') this.set('closed');
  }

  failure(): void {
    this.probing = false;
    if (this.current === 'open') return;
    this.consecutive++;
    if (this.current === 'half-open' || this.consecutive >= this.failures) {
      this.openedAt = this.clock();
      this.set('open');
    }
  }

  /** ms until the next probe may go through (the whole cooldown while closed). */
  retryAfter(): number {
    if (this.current !== 'open') return this.cooldown;
    return Math.max(1, Math.ceil(this.openedAt + this.cooldown - this.clock()));
  }

  private set(state: BreakerState): void {
    const previous = this.current;
    this.current = state;
    this.onChange(state, previous);
  }
}

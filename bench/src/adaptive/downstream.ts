/**
 * The bottleneck every bench app calls: a downstream that serves `slots` calls at once, each for
 * `serviceMs`, and queues the rest (a database pool, a rate-limited API). Its capacity is
 * `slots ÷ serviceMs`; `halve()` doubles the service time. Real timers: the bench runs in wall time.
 */
export class Downstream {
  private busy = 0;
  private readonly waiting: (() => void)[] = [];
  private head = 0;

  constructor(
    readonly slots: number,
    public serviceMs: number,
  ) {}

  /** Requests per second it can serve. */
  get capacity(): number {
    return (this.slots / this.serviceMs) * 1000;
  }

  halve(): void {
    this.serviceMs *= 2;
  }

  async call(): Promise<void> {
    if (this.busy >= this.slots) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.busy++;
    }
    try {
      await new Promise<void>((resolve) => setTimeout(resolve, this.serviceMs));
    } finally {
      const next = this.waiting[this.head];
      if (next === undefined) this.busy--;
      else {
        this.waiting[this.head++] = undefined as never;
        if (this.head > 1024 && this.head * 2 > this.waiting.length) {
          this.waiting.splice(0, this.head);
          this.head = 0;
        }
        next(); // the slot passes straight to the next caller
      }
    }
  }
}

import type { ClientRateLimitInfo, ExpressRateLimitStore, ResolvedExpressRateLimitOptions } from './types.js';

interface Client {
  hits: number;
  /** When the client's window ends, ms since the epoch. */
  resetAt: number;
}

/**
 * `fromExpressRateLimit`'s default store, counting as express-rate-limit's MemoryStore does: a
 * client's window opens at its first hit and lasts `windowMs`; every hit counts, refused ones
 * included. sluice's own algorithms count differently (a refused request costs nothing, windows
 * align to the epoch or slide), so a drop-in keeps this one. One process only (`localKeys`).
 */
export class FirstHitMemoryStore implements ExpressRateLimitStore {
  readonly localKeys = true;
  #windowMs = 60_000;
  readonly #clients = new Map<string, Client>();
  #sweep: ReturnType<typeof setInterval> | undefined;

  /**
   * @param maxKeys the most clients held at once: past it, the client whose window opened first
   *   is forgotten (it starts a fresh window if it returns), so a flood of new addresses within
   *   one window cannot grow memory without bound (express-rate-limit's own store has no bound).
   *   The same default as sluice's `MemoryStore`.
   */
  constructor(readonly maxKeys = 100_000) {}

  /** Clients held now. */
  get size(): number {
    return this.#clients.size;
  }

  init(options: ResolvedExpressRateLimitOptions): void {
    this.#windowMs = options.windowMs;
    clearInterval(this.#sweep);
    // Forget ended windows once a window, so a stream of one-off clients does not grow the map.
    this.#sweep = setInterval(() => this.#forgetEnded(Date.now()), this.#windowMs);
    this.#sweep.unref?.();
  }

  async get(key: string): Promise<ClientRateLimitInfo | undefined> {
    const client = this.#live(key, Date.now());
    return client === undefined ? undefined : info(client);
  }

  async increment(key: string): Promise<ClientRateLimitInfo> {
    const now = Date.now();
    let client = this.#live(key, now);
    if (client === undefined) {
      client = { hits: 0, resetAt: now + this.#windowMs };
      // A Map keeps insertion order: its first key is the window that opened first.
      this.#clients.delete(key);
      if (this.#clients.size >= this.maxKeys) this.#clients.delete(this.#clients.keys().next().value!);
      this.#clients.set(key, client);
    }
    client.hits += 1;
    return info(client);
  }

  async decrement(key: string): Promise<void> {
    const client = this.#live(key, Date.now());
    if (client !== undefined && client.hits > 0) client.hits -= 1;
  }

  async resetKey(key: string): Promise<void> {
    this.#clients.delete(key);
  }

  async resetAll(): Promise<void> {
    this.#clients.clear();
  }

  shutdown(): void {
    clearInterval(this.#sweep);
    this.#clients.clear();
  }

  #live(key: string, now: number): Client | undefined {
    const client = this.#clients.get(key);
    return client !== undefined && client.resetAt > now ? client : undefined;
  }

  #forgetEnded(now: number): void {
    for (const [key, client] of this.#clients) if (client.resetAt <= now) this.#clients.delete(key);
  }
}

const info = (client: Client): ClientRateLimitInfo => ({
  totalHits: client.hits,
  resetTime: new Date(client.resetAt),
});

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Reply, TestApp } from './harness.js';
import { subjects } from './subjects.js';

// Issue 25 §3: `app.use(rateLimit())`, `app.register(sluice)`, `new RateLimitGuard()` protect an
// app with no options at all: 100 requests a minute per client address, the limit named
// 'default'. The middleware makes its own MemoryStore, on the real clock: Date stands still at a
// minute's start (only Date is faked; timers and I/O are real), so all 101 requests fall in one
// window however slow the machine.
const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);

async function statuses(app: TestApp, n: number, headers: Record<string, string> = {}): Promise<Reply[]> {
  const replies: Reply[] = [];
  for (let i = 0; i < n; i++) replies.push(await app.request('GET', '/', headers));
  return replies;
}

for (const subject of subjects) {
  describe(`${subject.name}: the zero-config start (issue 25 §3)`, () => {
    let app: TestApp | undefined;
    beforeEach(() => {
      vi.useFakeTimers({ toFake: ['Date'], now: NOW });
    });
    afterEach(async () => {
      vi.useRealTimers();
      await app?.close();
      app = undefined;
    });

    it('with no options: 100 requests admitted within the minute, the 101st refused (429, Retry-After, policy "default")', async () => {
      app = await subject.build({ defaults: true, routes: [{ method: 'GET', path: '/' }] });
      const replies = await statuses(app, 101);
      expect(replies.slice(0, 100).filter((reply) => reply.status === 200).length).toBe(100);
      expect(replies[0]!.headers['ratelimit-policy']).toBe('"default";q=100;w=60');
      // Admitted, the window's counts weigh on the next one until its end: t=120.
      expect(replies[99]!.headers.ratelimit).toBe('"default";r=0;t=120');
      const refused = replies[100]!;
      // The window's 100 weigh on the next one until 0.6 s into it (a sliding window counter):
      // 60.6 s from the minute's start, rounded up.
      expect([refused.status, refused.headers['retry-after'], refused.headers['ratelimit-policy']]).toEqual([
        429,
        '61',
        '"default";q=100;w=60',
      ]);
      expect(refused.body).toMatchObject({ status: 429, 'violated-policies': ['default'] });
    });

    it('with a key only: the default limit, counted per that key', async () => {
      const key = (req: unknown, access: { header(req: unknown, name: string): string | undefined }) =>
        access.header(req, 'x-client');
      app = await subject.build({ options: { key }, routes: [{ method: 'GET', path: '/' }] });
      const a = await statuses(app, 101, { 'x-client': 'a' });
      expect(a.map((reply) => reply.status).filter((status) => status === 429).length).toBe(1);
      expect(a[100]!.headers['ratelimit-policy']).toBe('"default";q=100;w=60');
      const b = await app.request('GET', '/', { 'x-client': 'b' });
      expect([b.status, b.headers.ratelimit]).toEqual([200, '"default";r=99;t=120']);
    });
  });
}

/**
 * The address flood, in its own process so the heap can be measured after `global.gc()`: run
 * bundled (test/setup/node-script.ts) as `node --expose-gc <bundle> <requests> <maxKeys>`. Drives
 * `HttpLimiter` (the logic every adapter shares: `byIp` keys, IPv6 grouping, one `Limiter.check`
 * on a `MemoryStore`) with a request object per unique client address, half IPv4 and half IPv6
 * (each in its own /56). Every 1000 flood requests, one request comes from a fixed attacker
 * address. Prints one JSON line.
 */
import { fixedWindow, MemoryStore } from '@sluice/core';
import { HttpLimiter } from '@sluice/core/adapter';

interface FakeRequest {
  ip: string;
}

const requests = Number(process.argv[2] ?? 1_000_000);
const maxKeys = Number(process.argv[3] ?? 100_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with --expose-gc');

// A frozen clock: nothing expires during the flood, so only maxKeys bounds the store.
const store = new MemoryStore({ maxKeys, clock: () => 1_700_000_000_000 });
const errors: string[] = [];
const limiter = new HttpLimiter<FakeRequest>(
  'flood',
  { algorithm: fixedWindow({ limit: 10, window: '1m' }), store },
  {
    ip: (req) => req.ip,
    method: () => 'GET',
    route: () => undefined,
    header: () => undefined,
    proxyTrust: () => 'some',
  },
  { onError: (error) => errors.push(error.message), onWarning: () => {}, onReleaseError: () => {} },
);

function address(n: number): string {
  const i = n >>> 1;
  if ((n & 1) === 0)
    return `${10 + ((i >>> 24) & 0xff)}.${(i >>> 16) & 0xff}.${(i >>> 8) & 0xff}.${i & 0xff}`;
  // One /56 per client, and a different interface id each time.
  return `2001:db8:${(i >>> 8).toString(16)}:${((i & 0xff) << 8).toString(16)}::${(n & 0xffff).toString(16)}`;
}

function heap(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

const baseline = heap();
const samples: { requests: number; keys: number; heapUsed: number }[] = [];
let answered = 0;
let admitted = 0;
let maxKeyCount = 0;
let attackerAdmitted = 0;
const attacker: FakeRequest = { ip: '203.0.113.7' };
const start = performance.now();
for (let n = 0; n < requests; n++) {
  const decision = limiter.evaluate({ ip: address(n) });
  if (decision instanceof Promise) throw new Error('the memory store answers synchronously');
  if (decision !== undefined) answered++;
  if (decision?.allowed) admitted++;
  const keys = store.keyCount;
  if (keys > maxKeyCount) maxKeyCount = keys;
  if (n % 1000 === 999) {
    const hit = limiter.evaluate(attacker);
    if (hit instanceof Promise) throw new Error('the memory store answers synchronously');
    if (hit?.allowed) attackerAdmitted++;
  }
  if ((n + 1) % 100_000 === 0) samples.push({ requests: n + 1, keys, heapUsed: heap() });
}
const ms = performance.now() - start;
console.log(
  JSON.stringify({
    requests,
    maxKeys,
    answered,
    admitted,
    maxKeyCount,
    attackerRequests: Math.floor(requests / 1000),
    attackerAdmitted,
    errors,
    ms: Math.round(ms),
    baseline,
    samples,
  }),
);

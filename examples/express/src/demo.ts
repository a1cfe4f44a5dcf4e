import type { AddressInfo } from 'node:net';
import { createApp } from './app.js';

// Starts the app on a free port, fires a burst of 8 requests, prints what came back, and exits.
const server = createApp().listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
console.log(`burst of 8 requests to ${base}/ (limit: 5 at once, then 1 per second)\n`);

const started = Date.now();
let allowed = 0;
for (let i = 1; i <= 8; i++) {
  const response = await fetch(`${base}/`);
  const verdict = response.ok ? 'allowed' : 'refused';
  if (response.ok) allowed++;
  console.log(`#${i} ${response.status} ${verdict}`);
  console.log(`   RateLimit-Policy: ${response.headers.get('ratelimit-policy')}`);
  console.log(`   RateLimit:        ${response.headers.get('ratelimit')}`);
  if (!response.ok) {
    console.log(`   Retry-After:      ${response.headers.get('retry-after')}`);
    const problem = (await response.json()) as { type: string; detail: string };
    console.log(`   body: ${problem.type}\n         ${problem.detail}`);
  } else {
    await response.arrayBuffer();
  }
}
// The bucket refills 1 token a second while the burst runs: a burst slower than a second (a busy
// machine) lets one more request through per second it took.
const seconds = ((Date.now() - started) / 1000).toFixed(2);
console.log(
  `\n${allowed} allowed, ${8 - allowed} refused, in ${seconds} s (5 at once, plus 1 per second elapsed)`,
);
server.close();

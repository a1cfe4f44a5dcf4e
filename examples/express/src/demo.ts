import type { AddressInfo } from 'node:net';
import { createApp } from './app.js';

// Starts the app on a free port, fires a burst of 8 requests, prints what came back, and exits.
const server = createApp().listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
console.log(`burst of 8 requests to ${base}/ (limit: 5 at once, then 1 per second)\n`);

for (let i = 1; i <= 8; i++) {
  const response = await fetch(`${base}/`);
  const verdict = response.ok ? 'allowed' : 'refused';
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
server.close();

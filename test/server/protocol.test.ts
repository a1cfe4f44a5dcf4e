import { execFile } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  crowdOnOneBucket,
  eachTokenOnce,
  rawClient,
  redisCli,
  startServer,
  type TestServer,
  tempDir,
  until,
} from './harness.js';

const run = promisify(execFile);

describe('sluice-server protocol', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startServer({ maxFrameBytes: 64 * 1024, maxArgs: 16 });
  });
  afterAll(() => t.stop());

  it('answers the handshake commands clients send', async () => {
    const client = await t.client({ connectionName: 'worker-1' });
    expect(await client.call('CLIENT', 'GETNAME')).toBe('worker-1');
    expect(await client.call('SELECT', '0')).toBe('OK');
    await expect(client.call('SELECT', '1')).rejects.toThrow('ERR DB index is out of range');
    await expect(client.call('HELLO', '3')).rejects.toThrow(/^NOPROTO/);
    expect(await client.ping()).toBe('PONG');
    expect(await client.call('PING', 'hi')).toBe('hi');
    expect(await client.call('COMMAND', 'DOCS')).toEqual([]);
    expect(await client.call('COMMAND', 'COUNT')).toBeGreaterThan(10);
    await expect(client.call('NOSUCH', 'a')).rejects.toThrow("ERR unknown command 'nosuch'");
    await expect(client.call('PING', 'a', 'b')).rejects.toThrow(
      "ERR wrong number of arguments for 'ping' command",
    );
    const info = (await client.info()) as string;
    expect(info).toMatch(/^connected_clients:[1-9]/m);
    expect(info).toMatch(/^total_commands_processed:[1-9]/m);
    expect(info).toMatch(/^loading:0/m);
    expect(await client.quit()).toBe('OK');
  });

  it('node-redis drives it over RESP2 (RESP: 2; its default since v6 is RESP3, which is refused)', async () => {
    const client = createClient({ RESP: 2, socket: { host: '127.0.0.1', port: t.port }, name: 'nr' });
    await client.connect();
    try {
      expect(await client.sendCommand(['RL.REDUCE', 'node-redis', '2', '3600'])).toBe(2);
      expect(await client.sendCommand(['RL.REDUCE', 'node-redis', '2', '3600'])).toBe(1);
      expect(await client.sendCommand(['CLIENT', 'GETNAME'])).toBe('nr');
      const hello = (await client.sendCommand(['HELLO', '2'])) as unknown[];
      expect(hello.slice(4, 6)).toEqual(['proto', 2]);
    } finally {
      await client.quit();
    }
  });

  it('redis-cli: PING, COMMAND DOCS and INFO', async () => {
    expect(await redisCli(t.port, ['PING'])).toBe('PONG');
    expect(await redisCli(t.port, ['INFO'])).toMatch(/sluice_server_version:/);
  });

  it('pipelined commands are answered in order', async () => {
    const client = await t.client();
    const pipeline = client.pipeline();
    for (let i = 0; i < 500; i++) pipeline.call('RL.PREDUCE', 'pipe', '400', '1000', 'AT', '0');
    pipeline.ping();
    const results = (await pipeline.exec())!;
    const answers = results.map(([err, value]) => (err === null ? value : err.message));
    expect(answers).toEqual([
      ...Array.from({ length: 400 }, (_, i) => 400 - i),
      ...Array(100).fill(0),
      'PONG',
    ]);
  });

  it('many clients at once: exactly the bucket is admitted, never more', async () => {
    const clients = await Promise.all(Array.from({ length: 40 }, () => t.client()));
    // Each reply is the tokens before taking one: 1000 distinct values were handed out, then zeros.
    expect(eachTokenOnce(await crowdOnOneBucket(clients))).toEqual({
      handedOut: Array.from({ length: 1000 }, (_, i) => i + 1),
      refused: 200,
    });
  });

  it('a malformed frame closes that connection with a logged reason; others carry on', async () => {
    const raw = rawClient(t.port);
    raw.socket.write('*1\r\n$4\r\nPING\r\n%3\r\nxyz\r\n');
    await raw.closed;
    expect(raw.received()).toMatch(/^\+PONG\r\n-ERR Protocol error: /);
    expect(t.events.some((e) => e.event === 'protocol-error')).toBe(true);

    const notArray = rawClient(t.port);
    notArray.socket.write(':42\r\n');
    await notArray.closed;
    expect(notArray.received()).toBe("-ERR Protocol error: expected '*', got ':'\r\n");

    const client = await t.client();
    expect(await client.ping()).toBe('PONG');
  });

  it("garbage lengths get Redis's protocol errors and the connection is closed, not left waiting (issue 23, 1.3)", async () => {
    const cases: [sent: string, reason: string][] = [
      ['*abc\r\n', 'invalid multibulk length'],
      ['*1.5\r\n', 'invalid multibulk length'],
      ['*+1\r\n$4\r\nPING\r\n', 'invalid multibulk length'],
      ['*99999999999999999999\r\n', 'invalid multibulk length'],
      ['*1\r\n$abc\r\n', 'invalid bulk length'],
      ['*1\r\n$-1\r\n', 'invalid bulk length'],
      ['*1\r\n$4.0\r\nPING\r\n', 'invalid bulk length'],
      ['*1\r\n$99999999999999999999\r\n', 'invalid bulk length'],
      ['*1\r\n:42\r\n', "expected '$', got ':'"],
      // A length line that never ends: refused once it is longer than any length can be.
      [`*${'1'.repeat(100)}`, 'invalid multibulk length'],
      [`*1\r\n$${'1'.repeat(100)}`, 'invalid bulk length'],
    ];
    for (const [sent, reason] of cases) {
      const raw = rawClient(t.port);
      raw.socket.write(`*1\r\n$4\r\nPING\r\n${sent}`);
      // Generous: the server answers at once; a hang is what this catches.
      await Promise.race([
        raw.closed,
        new Promise((_, reject) =>
          setTimeout(() => reject(new Error(`no answer to ${JSON.stringify(sent)}`)), 10_000),
        ),
      ]);
      expect(raw.received(), JSON.stringify(sent)).toBe(`+PONG\r\n-ERR Protocol error: ${reason}\r\n`);
    }
    const client = await t.client();
    expect(await client.ping()).toBe('PONG');
  });

  it('an empty or negative multibulk (*0, *-1, *-2) is skipped without a reply, as Redis does', async () => {
    const raw = rawClient(t.port);
    raw.socket.write('*0\r\n*-1\r\n*-2\r\n*1\r\n$4\r\nPING\r\n');
    await until(() => raw.received() === '+PONG\r\n', 'PONG');
    raw.socket.destroy();
  });

  it('a frame beyond max-frame-bytes (a client sending a huge bulk string) is cut off', async () => {
    const raw = rawClient(t.port);
    const before = t.events.length;
    raw.socket.write('*2\r\n$4\r\nECHO\r\n$1000000000\r\n');
    const chunk = Buffer.alloc(16 * 1024, 0x61);
    // Sends until the server hangs up: it must do so soon after 64 KiB, not buffer a gigabyte.
    let sent = 0;
    while (!raw.socket.destroyed && sent < 4 * 1024 * 1024) {
      if (!raw.socket.write(chunk)) await new Promise((r) => setTimeout(r, 1));
      sent += chunk.length;
      if (raw.received() !== '') break;
    }
    await raw.closed;
    expect(raw.received()).toContain('max-frame-bytes');
    const logged = t.events.slice(before).find((e) => e.event === 'protocol-error');
    expect(String(logged?.fields.reason)).toContain('max-frame-bytes');
  });

  it('too many arguments gets an error, and the connection stays usable', async () => {
    const client = await t.client();
    const args = Array.from({ length: 17 }, (_, i) => String(i));
    await expect(client.call('RL.PREDUCE', ...args)).rejects.toThrow(
      'ERR too many arguments (17; max-args is 16)',
    );
    expect(await client.ping()).toBe('PONG');
  });

  it('a client that sends without reading is paused (backpressure), and gets every reply when it reads', async () => {
    const socket = connect(t.port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.pause();
    const count = 1000;
    const payload = 'x'.repeat(32 * 1024);
    const frame = `*2\r\n$4\r\nECHO\r\n$${payload.length}\r\n${payload}\r\n`;
    const reply = `$${payload.length}\r\n${payload}\r\n`;
    // 32 MB of replies: far more than the kernel's socket buffers hold unread.
    for (let i = 0; i < count; i++) socket.write(frame);
    const observer = await t.client();
    let paused = 0;
    for (let i = 0; i < 400 && paused === 0; i++) {
      const info = (await observer.info('stats')) as string;
      paused = Number(/paused_for_backpressure:(\d+)/.exec(info)?.[1]);
      if (paused === 0) await new Promise((r) => setTimeout(r, 10));
    }
    expect(paused).toBeGreaterThan(0);
    let received = 0;
    socket.on('data', (chunk: Buffer) => {
      received += chunk.length;
    });
    socket.resume();
    await until(() => received === count * reply.length, 'every reply');
    socket.destroy();
  });

  it('max-clients: a connection beyond the limit is refused with an error', async () => {
    const small = await startServer({ maxClients: 2 });
    try {
      await small.client();
      await small.client();
      const raw = rawClient(small.port);
      await raw.closed;
      expect(raw.received()).toBe('-ERR max number of clients reached\r\n');
    } finally {
      await small.stop();
    }
  });

  it('requirepass: NOAUTH before AUTH, WRONGPASS for a wrong password, ioredis connects with it', async () => {
    const locked = await startServer({ requirePass: 's3cret' });
    try {
      const anonymous = new Redis({
        host: '127.0.0.1',
        port: locked.port,
        lazyConnect: true,
        enableReadyCheck: false,
      });
      await anonymous.connect();
      await expect(anonymous.call('RL.GET', 'k', '1', '1')).rejects.toThrow(
        'NOAUTH Authentication required.',
      );
      await expect(anonymous.call('AUTH', 'nope')).rejects.toThrow(/^WRONGPASS/);
      expect(await anonymous.call('AUTH', 's3cret')).toBe('OK');
      expect(await anonymous.call('RL.GET', 'k', '1', '1')).toBe(1);
      anonymous.disconnect();
      const client = await locked.client({ password: 's3cret' });
      expect(await client.call('RL.REDUCE', 'k', '1', '3600')).toBe(1);
      expect(
        await redisCli(locked.port, ['-a', 's3cret', '--no-auth-warning', 'RL.GET', 'k', '1', '60']),
      ).toBe('1');
      expect(
        await redisCli(locked.port, ['-a', 's3cret', '--no-auth-warning', 'RL.GET', 'k', '1', '3600']),
      ).toBe('0');
    } finally {
      await locked.stop();
    }
  });

  it('without a password configured, AUTH says so', async () => {
    const client = await t.client();
    await expect(client.call('AUTH', 'x')).rejects.toThrow(/without any password configured/);
  });
});

describe('sluice-server over TLS', () => {
  it('serves ioredis over TLS with the given key and certificate; a plain TCP client gets nothing', async () => {
    const dir = await tempDir();
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    await run('openssl', [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ]);
    const pem = { key: await readFile(key), cert: await readFile(cert) };
    const t = await startServer({ tls: pem });
    try {
      const client = await t.client({ tls: { ca: pem.cert } });
      expect(await client.call('RL.REDUCE', 'tls', '2', '3600')).toBe(2);
      const raw = rawClient(t.port);
      raw.socket.write('*1\r\n$4\r\nPING\r\n');
      await raw.closed;
      expect(raw.received()).not.toContain('PONG');
    } finally {
      await t.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

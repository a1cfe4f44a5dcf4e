import {
  type ClientHttp2Session,
  connect,
  constants,
  type IncomingHttpHeaders,
  type IncomingHttpStatusHeader,
} from 'node:http2';
import { gzipSync } from 'node:zlib';
import { MemoryStore } from '@sluice/core';
import { type RlsBackend, StoreBackend } from '@sluice/server';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { encodeStatusMessage, parseTimeout } from '../../packages/server/src/rls/grpc-frames.js';
import { d, publishedService, type RlsSubject, startRls } from './rls-harness.js';

// The gRPC-over-HTTP/2 edges the rate limit service owns since it left @grpc/grpc-js
// (grpc/grpc doc/PROTOCOL-HTTP2.md, doc/compression.md), driven by a raw node:http2 client so
// that every byte on the wire is the test's. The request messages are encoded by a client built
// from Envoy's published proto, not by the server's own codecs.

const CONFIG = {
  'app.yaml':
    'domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 1000 }\n',
};
const PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';
const MAX = 4096;

const method = (
  publishedService() as unknown as {
    service: {
      ShouldRateLimit: {
        requestSerialize(value: unknown): Buffer;
        responseDeserialize(bytes: Buffer): { overall_code: string; statuses: { limit_remaining: number }[] };
      };
    };
  }
).service.ShouldRateLimit;

function request(value: string): Buffer {
  return method.requestSerialize({ domain: 'app', descriptors: [d('user', value)] });
}

/** `message` with its 5-byte gRPC prefix (`flag` as the compressed flag, `length` as announced). */
function framed(message: Buffer, flag = 0, length = message.length): Buffer {
  const prefix = Buffer.alloc(5);
  prefix[0] = flag;
  prefix.writeUInt32BE(length, 1);
  return Buffer.concat([prefix, message]);
}

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders & IncomingHttpStatusHeader;
  readonly trailers: IncomingHttpHeaders | undefined;
  readonly body: Buffer;
  /** grpc-status from the trailers, or from the headers of a Trailers-Only answer. */
  readonly grpcStatus: number | undefined;
  readonly grpcMessage: string | undefined;
}

let s: RlsSubject;
let session: ClientHttp2Session;

/** One raw HTTP/2 request on the test's connection; `end: false` leaves the request open. */
function call(
  body: Buffer[],
  headers: Record<string, string> = {},
  { path = PATH, end = true }: { path?: string; end?: boolean } = {},
  on: ClientHttp2Session = session,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = on.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...headers,
    });
    let head: Answer['headers'] | undefined;
    let trailers: IncomingHttpHeaders | undefined;
    const chunks: Buffer[] = [];
    stream.on('response', (h) => {
      head = h;
    });
    stream.on('trailers', (t) => {
      trailers = t;
    });
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('error', reject);
    stream.on('close', () => {
      if (head === undefined) {
        reject(new Error(`no response (stream closed with code ${stream.rstCode})`));
        return;
      }
      const from = trailers ?? head;
      resolve({
        status: head[':status'] ?? 0,
        headers: head,
        trailers,
        body: Buffer.concat(chunks),
        grpcStatus: from['grpc-status'] === undefined ? undefined : Number(from['grpc-status']),
        grpcMessage: from['grpc-message'] as string | undefined,
      });
    });
    for (const chunk of body) stream.write(chunk);
    if (end) stream.end();
  });
}

/** The call answered OK with one message: the decoded answer. */
function answered(a: Answer) {
  expect(a.status).toBe(200);
  expect(a.headers['content-type']).toBe('application/grpc');
  expect(a.grpcStatus).toBe(0);
  expect(a.body[0]).toBe(0);
  expect(a.body.readUInt32BE(1)).toBe(a.body.length - 5);
  return method.responseDeserialize(a.body.subarray(5));
}

async function stillServes(value: string): Promise<void> {
  const r = answered(await call([framed(request(value))]));
  expect(r.overall_code).toBe('OK');
}

beforeAll(async () => {
  s = await startRls(CONFIG, { maxMessageBytes: MAX });
  session = connect(`http://127.0.0.1:${s.port}`);
});
afterAll(async () => {
  session.close();
  await s.stop();
});

describe('framing', () => {
  it('a well-formed call: 200, application/grpc, one prefixed message, grpc-status 0 in the trailers', async () => {
    const a = await call([framed(request('plain'))]);
    expect(answered(a)).toMatchObject({ overall_code: 'OK', statuses: [{ limit_remaining: 999 }] });
    expect(a.trailers?.['grpc-status']).toBe('0');
  });

  it('a message split across DATA frames, its prefix too, is read whole', async () => {
    const whole = framed(request('split'));
    const a = await call([whole.subarray(0, 2), whole.subarray(2, 7), whole.subarray(7)]);
    expect(answered(a).statuses[0]!.limit_remaining).toBe(999);
  });

  it('a truncated frame (more bytes announced than sent): INTERNAL, the connection goes on', async () => {
    const whole = framed(request('truncated'));
    const a = await call([whole.subarray(0, whole.length - 3)]);
    expect(a.status).toBe(200);
    expect(a.grpcStatus).toBe(13);
    expect(a.grpcMessage).toMatch(/truncated message frame/);
    await stillServes('after-truncated');
  });

  it('a body shorter than the prefix, and an empty body: INTERNAL', async () => {
    expect((await call([Buffer.from([0, 0])])).grpcStatus).toBe(13);
    expect((await call([])).grpcStatus).toBe(13);
  });

  it('two messages on a unary call: INTERNAL, nothing decided', async () => {
    const one = framed(request('twice'));
    const a = await call([one, one]);
    expect(a.grpcStatus).toBe(13);
    // Not counted: the same value's first decided call still sees the whole limit.
    expect(answered(await call([framed(request('twice'))])).statuses[0]!.limit_remaining).toBe(999);
  });

  it('bytes that are no RateLimitRequest: INTERNAL naming deserialization', async () => {
    const a = await call([framed(Buffer.from([0x12, 0x05, 0x0a]))]);
    expect(a.grpcStatus).toBe(13);
    expect(decodeURIComponent(a.grpcMessage ?? '')).toMatch(/deserializ/i);
  });
});

describe('compression', () => {
  it('the compressed flag without a grpc-encoding: INTERNAL (the flag must be 0 then)', async () => {
    const a = await call([framed(request('flag'), 1)]);
    expect(a.grpcStatus).toBe(13);
    expect(a.grpcMessage).toMatch(/compressed message without a grpc-encoding/);
  });

  it('the compressed flag with grpc-encoding identity: INTERNAL', async () => {
    expect((await call([framed(request('flag'), 1)], { 'grpc-encoding': 'identity' })).grpcStatus).toBe(13);
  });

  it('an encoding the server cannot read: UNIMPLEMENTED, naming the ones it can in grpc-accept-encoding', async () => {
    const a = await call([framed(request('snappy'), 1)], { 'grpc-encoding': 'snappy' });
    expect(a.grpcStatus).toBe(12);
    expect(a.headers['grpc-accept-encoding']).toBe('identity,deflate,gzip');
  });

  it('a gzip message with grpc-encoding gzip is read; uncompressed ones on such a call too', async () => {
    const zipped = await call([framed(gzipSync(request('zipped')), 1)], { 'grpc-encoding': 'gzip' });
    expect(answered(zipped).statuses[0]!.limit_remaining).toBe(999);
    const plain = await call([framed(request('zipped'), 0)], { 'grpc-encoding': 'gzip' });
    expect(answered(plain).statuses[0]!.limit_remaining).toBe(998);
  });

  it('a gzip message that inflates past maxMessageBytes: RESOURCE_EXHAUSTED', async () => {
    const bomb = gzipSync(
      method.requestSerialize({ domain: 'app', descriptors: [d('user', 'x'.repeat(MAX * 4))] }),
    );
    expect(bomb.length).toBeLessThan(MAX);
    const a = await call([framed(bomb, 1)], { 'grpc-encoding': 'gzip' });
    expect(a.grpcStatus).toBe(8);
  });
});

describe('sizes', () => {
  it('a message over maxMessageBytes: RESOURCE_EXHAUSTED, the connection goes on', async () => {
    const big = method.requestSerialize({ domain: 'app', descriptors: [d('user', 'x'.repeat(MAX))] });
    expect(big.length).toBeGreaterThan(MAX);
    const a = await call([framed(big)]);
    expect(a.status).toBe(200);
    expect(a.grpcStatus).toBe(8);
    expect(a.grpcMessage).toBe(
      `request message of ${big.length} bytes is larger than maxMessageBytes (${MAX})`,
    );
    await stillServes('after-big');
  });

  it('refused from the prefix alone: a 1 GiB announcement is answered before its body is sent', async () => {
    // The request stays open: an answer can only come from the 5 bytes of the prefix.
    const a = await call([framed(Buffer.alloc(16), 0, 1 << 30)], {}, { end: false });
    expect(a.grpcStatus).toBe(8);
    await stillServes('after-announced');
  });
});

describe('routing and headers', () => {
  it('an unknown method of the service, and an unknown service: UNIMPLEMENTED', async () => {
    const body = [framed(request('route'))];
    const m = await call(body, {}, { path: '/envoy.service.ratelimit.v3.RateLimitService/Nope' });
    expect(m.status).toBe(200);
    expect(m.grpcStatus).toBe(12);
    expect(m.grpcMessage).toMatch(/unknown method/);
    expect((await call(body, {}, { path: '/no.Such/Service' })).grpcStatus).toBe(12);
  });

  it('a content-type other than application/grpc: HTTP 415, no gRPC status', async () => {
    const a = await call([framed(request('json'))], { 'content-type': 'application/json' });
    expect(a.status).toBe(415);
    expect(a.grpcStatus).toBeUndefined();
    await stillServes('after-json');
  });

  it('application/grpc+proto is gRPC too', async () => {
    const a = await call([framed(request('plus-proto'))], { 'content-type': 'application/grpc+proto' });
    expect(answered(a).overall_code).toBe('OK');
  });

  it('a health Watch with a grpc-timeout: its messages, then DEADLINE_EXCEEDED in the trailers', async () => {
    // The watch never ends by itself while the service serves: the deadline is what ends it.
    const a = await call(
      [framed(Buffer.alloc(0))],
      { 'grpc-timeout': '30m' },
      { path: '/grpc.health.v1.Health/Watch' },
    );
    expect(a.status).toBe(200);
    expect(a.body).toEqual(framed(Buffer.from([0x08, 0x01]))); // HealthCheckResponse { status: SERVING }
    expect(a.trailers?.['grpc-status']).toBe('4');
  });

  it('a malformed grpc-timeout: INTERNAL', async () => {
    expect((await call([framed(request('t'))], { 'grpc-timeout': '10 seconds' })).grpcStatus).toBe(13);
  });
});

describe('calls that do not finish', () => {
  let gated: RlsSubject | undefined;
  let release: () => void = () => {};
  let entered: Promise<void>;
  let enteredCount = 0;

  /** A service whose backend holds every decision until `release()`. */
  async function startGated(options: { closeTimeout?: number } = {}): Promise<RlsSubject> {
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let enter!: () => void;
    entered = new Promise<void>((resolve) => {
      enter = resolve;
    });
    gated = await startRls(CONFIG, options, (clock): RlsBackend => {
      const inner = new StoreBackend(new MemoryStore(), clock);
      return {
        name: 'gated',
        async decide(calls, allOrNothing) {
          enteredCount++;
          enter();
          await gate;
          return inner.decide(calls, allOrNothing);
        },
      };
    });
    return gated;
  }

  afterEach(async () => {
    release();
    await gated?.stop();
    gated = undefined;
  });

  it('a grpc-timeout that passes before the answer: DEADLINE_EXCEEDED; the late answer goes nowhere', async () => {
    const g = await startGated();
    const own = connect(`http://127.0.0.1:${g.port}`);
    try {
      // The backend never answers while the call waits: the deadline is what ends it.
      const a = await call([framed(request('late'))], { 'grpc-timeout': '20m' }, {}, own);
      expect(a.grpcStatus).toBe(4);
      release();
      // The held decision completes after its call ended; the next call on the connection is answered.
      const next = await call([framed(request('next'))], { 'grpc-timeout': '100S' }, {}, own);
      expect(answered(next).overall_code).toBe('OK');
    } finally {
      own.close();
    }
  });

  it.each([
    ['CANCEL', constants.NGHTTP2_CANCEL],
    ['INTERNAL_ERROR', constants.NGHTTP2_INTERNAL_ERROR],
  ])(
    'a client that resets its stream mid-call (%s): no error, the connection and the service go on',
    async (_, code) => {
      const g = await startGated();
      const own = connect(`http://127.0.0.1:${g.port}`);
      try {
        const stream = own.request({ ':method': 'POST', ':path': PATH, 'content-type': 'application/grpc' });
        const closed = new Promise<number>((resolve) =>
          stream.on('close', () => resolve(stream.rstCode ?? -1)),
        );
        stream.on('error', () => {});
        stream.end(framed(request('reset')));
        await entered;
        stream.close(code);
        expect(await closed).toBe(code);
        release(); // the decision of the reset call completes with no stream to answer on
        const next = await call([framed(request('after-reset'))], {}, {}, own);
        expect(answered(next).overall_code).toBe('OK');
        expect(enteredCount).toBeGreaterThanOrEqual(2);
        expect(g.events.map((e) => e.event)).not.toContain('decide-error');
      } finally {
        own.close();
      }
    },
  );

  it('close() past closeTimeout cancels the call still in flight, and resolves', async () => {
    const g = await startGated({ closeTimeout: 50 });
    const own = connect(`http://127.0.0.1:${g.port}`);
    own.on('error', () => {});
    const held = call([framed(request('held'))], {}, {}, own).then(
      (a) => ({ answered: a }),
      (err: Error) => ({ failed: err }),
    );
    await entered;
    await g.rls.close();
    // Cancelled, never answered OK: the stream is reset (or the connection dropped) with no status.
    const outcome = await held;
    expect('failed' in outcome || ('answered' in outcome && outcome.answered.grpcStatus !== 0)).toBe(true);
    expect(g.events.map((e) => e.event)).toContain('rls-stopped');
    own.destroy();
  });
});

describe('grpc-frames', () => {
  it('grpc-timeout in every unit, in ms', () => {
    expect(parseTimeout(undefined)).toBeUndefined();
    expect(parseTimeout('2H')).toBe(7_200_000);
    expect(parseTimeout('3M')).toBe(180_000);
    expect(parseTimeout('4S')).toBe(4000);
    expect(parseTimeout('5m')).toBe(5);
    expect(parseTimeout('6000u')).toBe(6);
    expect(parseTimeout('7000000n')).toBe(7);
    expect(() => parseTimeout('123456789S')).toThrow(/invalid grpc-timeout/);
    expect(() => parseTimeout('5s')).toThrow(/invalid grpc-timeout/);
    expect(() => parseTimeout('')).toThrow(/invalid grpc-timeout/);
    // The same value again (Envoy's every call) reads the same; another after it is read anew.
    expect([parseTimeout('20m'), parseTimeout('20m'), parseTimeout('20S')]).toEqual([20, 20, 20_000]);
  });

  it('grpc-message percent-encodes what is not printable ASCII, and % itself', () => {
    expect(encodeStatusMessage('plain text: ok')).toBe('plain text: ok');
    expect(encodeStatusMessage('100% é\n')).toBe('100%25 %C3%A9%0A');
  });
});

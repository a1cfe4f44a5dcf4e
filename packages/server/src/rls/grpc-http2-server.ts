import {
  constants,
  createServer,
  type Http2Server,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import { type Deadline, Deadlines } from './deadlines.js';
import {
  ACCEPT_ENCODING,
  checkAnnounced,
  checkBodySize,
  checkEncoding,
  encodeStatusMessage,
  frame,
  GrpcError,
  GrpcStatus,
  parseTimeout,
  readMessage,
} from './grpc-frames.js';

/**
 * The gRPC server of the rate limit service: unary and server-streaming calls on `node:http2`,
 * without @grpc/grpc-js's interceptors, call objects and per-message streams (they cost more per
 * call than the decision itself). A method handler takes the request message's bytes and answers
 * bytes; the framing, the trailers, deadlines, sizes and malformed input are handled here as
 * grpc/grpc doc/PROTOCOL-HTTP2.md specifies.
 */

/** A unary method: the answer's bytes, or a rejection (a GrpcError's code, else UNKNOWN). */
export interface UnaryMethod {
  readonly kind: 'unary';
  /** The answers carry gRPC's 5-byte message prefix already (written in place, not copied). @default false */
  readonly framed?: boolean;
  handle(message: Buffer): Promise<Uint8Array>;
}

/** The server side of a server-streaming call. */
export interface ServerStreamCall {
  write(message: Uint8Array): void;
  /** Ends the call with status OK. */
  end(): void;
  /** `listener` runs once when the call is over, ended or cancelled by the client. */
  onClose(listener: () => void): void;
}

/** A server-streaming method: writes to `call` until it ends it or the client goes away. */
export interface ServerStreamMethod {
  readonly kind: 'server-stream';
  handle(message: Buffer, call: ServerStreamCall): void;
}

export type GrpcMethod = UnaryMethod | ServerStreamMethod;

const OK_HEADERS = { ':status': 200, 'content-type': 'application/grpc' };
const OK_TRAILERS = { 'grpc-status': '0' };
// No `date` header: gRPC has no use for it, and node formats and encodes it on every answer.
const WAIT_FOR_TRAILERS = { waitForTrailers: true, sendDate: false };
const END_STREAM = { endStream: true, sendDate: false };

function sendOkTrailers(this: ServerHttp2Stream): void {
  this.sendTrailers(OK_TRAILERS);
}

function sendDeadlineTrailers(this: ServerHttp2Stream): void {
  this.sendTrailers({
    'grpc-status': String(GrpcStatus.DEADLINE_EXCEEDED),
    'grpc-message': 'deadline exceeded',
  });
}

function ignore(): void {
  // A reset stream or a dropped connection ends its calls; nothing to report, no one to tell.
}

/**
 * Ends a call that sent no headers yet with a status (gRPC's Trailers-Only response). A request
 * still arriving is then reset with NO_ERROR, as PROTOCOL-HTTP2.md asks of a server that answers
 * early (node sends the RST_STREAM after the trailers).
 */
function endWithStatus(stream: ServerHttp2Stream, code: number, message: string): void {
  if (stream.headersSent || stream.destroyed) return;
  const headers: Record<string, string | number> = {
    ':status': 200,
    'content-type': 'application/grpc',
    'grpc-status': String(code),
    'grpc-message': encodeStatusMessage(message),
  };
  if (code === GrpcStatus.UNIMPLEMENTED) headers['grpc-accept-encoding'] = ACCEPT_ENCODING;
  stream.respond(headers, END_STREAM);
  if (!stream.readableEnded) stream.close(constants.NGHTTP2_NO_ERROR);
}

function endWithError(stream: ServerHttp2Stream, err: unknown): void {
  if (err instanceof GrpcError) endWithStatus(stream, err.code, err.message);
  else endWithStatus(stream, GrpcStatus.UNKNOWN, (err as Error)?.message ?? String(err));
}

/** One call from its headers to its answer: collects the request body, then runs the method. */
class Call {
  private first: Buffer | undefined;
  private rest: Buffer[] | undefined;
  private size = 0;
  private deadline: Deadline | undefined;

  constructor(
    private readonly stream: ServerHttp2Stream,
    private readonly method: GrpcMethod,
    private readonly encoding: string | undefined,
    private readonly maxMessageBytes: number,
    timeoutMs: number | undefined,
    deadlines: Deadlines,
  ) {
    stream.on('data', (chunk: Buffer) => this.onData(chunk));
    stream.on('end', () => this.onEnd());
    if (timeoutMs !== undefined) {
      const deadline = deadlines.add(timeoutMs, () => this.onDeadline());
      this.deadline = deadline;
      // A long timeout's own timer would hold a reset call until then; a queued one is dropped at
      // its due time whatever happened (onDeadline finds the stream gone).
      if (!deadline.queued) stream.once('close', () => this.finish());
    }
  }

  private onData(chunk: Buffer): void {
    if (this.stream.headersSent) return; // already refused: the rest is dropped
    const before = this.size;
    this.size += chunk.length;
    if (this.first === undefined) this.first = chunk;
    else {
      this.rest ??= [this.first];
      this.rest.push(chunk);
    }
    try {
      // The prefix announces the length: refuse an oversized message before buffering it, and
      // a body longer than any one message could be.
      if (before < 5 && this.size >= 5) checkAnnounced(this.body(), this.maxMessageBytes);
      checkBodySize(this.size, this.maxMessageBytes);
    } catch (err) {
      endWithError(this.stream, err);
    }
  }

  private body(): Buffer {
    if (this.rest === undefined) return this.first ?? Buffer.alloc(0);
    if (this.rest.length > 1) this.rest = [Buffer.concat(this.rest)];
    return this.rest[0]!;
  }

  private onEnd(): void {
    const stream = this.stream;
    if (stream.headersSent || stream.destroyed) return;
    let message: Buffer;
    try {
      message = readMessage(this.body(), this.encoding, this.maxMessageBytes);
    } catch (err) {
      this.finish();
      endWithError(stream, err);
      return;
    }
    this.first = this.rest = undefined;
    const method = this.method;
    if (method.kind === 'unary') {
      method.handle(message).then(
        (answer) => {
          this.finish();
          if (stream.headersSent || stream.destroyed) return; // past its deadline, or reset
          stream.respond(OK_HEADERS, WAIT_FOR_TRAILERS);
          stream.on('wantTrailers', sendOkTrailers); // emitted once per stream
          stream.end(method.framed === true ? answer : frame(answer));
        },
        (err: unknown) => {
          this.finish();
          endWithError(stream, err);
        },
      );
      return;
    }
    // A stream keeps its deadline (onDeadline ends it with DEADLINE_EXCEEDED after its messages).
    method.handle(message, {
      write(answer) {
        if (stream.destroyed || stream.writableEnded) return;
        if (!stream.headersSent) {
          stream.respond(OK_HEADERS, WAIT_FOR_TRAILERS);
          stream.on('wantTrailers', sendOkTrailers); // emitted once per stream
        }
        stream.write(frame(answer));
      },
      end() {
        if (stream.destroyed || stream.writableEnded) return;
        if (!stream.headersSent) endWithStatus(stream, GrpcStatus.OK, '');
        else stream.end();
      },
      onClose(listener) {
        stream.once('close', listener);
      },
    });
  }

  private onDeadline(): void {
    this.deadline = undefined;
    const stream = this.stream;
    if (!stream.headersSent) {
      endWithStatus(stream, GrpcStatus.DEADLINE_EXCEEDED, 'deadline exceeded');
    } else if (!stream.destroyed && !stream.writableEnded) {
      // A stream that has sent messages: its trailers carry the status instead of OK.
      stream.off('wantTrailers', sendOkTrailers);
      stream.on('wantTrailers', sendDeadlineTrailers);
      stream.end();
    }
  }

  private finish(): void {
    this.deadline?.cancel();
    this.deadline = undefined;
  }
}

/** The methods by path (`/package.Service/Method`), served over cleartext HTTP/2 (h2c). */
export class GrpcHttp2Server {
  private readonly server: Http2Server;
  private readonly sessions = new Set<Http2Session>();
  private readonly deadlines = new Deadlines();
  private draining = false;

  constructor(
    private readonly methods: ReadonlyMap<string, GrpcMethod>,
    private readonly maxMessageBytes: number,
  ) {
    // node's default of 10 MB per session would refuse (ENHANCE_YOUR_CALM) a few large messages
    // in flight at once; the size of each is bounded by maxMessageBytes instead, as grpc-js does.
    this.server = createServer({ maxSessionMemory: Number.MAX_SAFE_INTEGER });
    this.server.on('session', (session) => this.onSession(session));
    this.server.on('stream', (stream, headers) => this.onStream(stream, headers));
  }

  private onSession(session: Http2Session): void {
    session.on('error', ignore);
    this.sessions.add(session);
    session.once('close', () => this.sessions.delete(session));
    if (this.draining) session.close();
  }

  private onStream(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    stream.on('error', ignore);
    const type = headers['content-type'];
    if (type === undefined || !type.startsWith('application/grpc')) {
      // PROTOCOL-HTTP2.md: 415, so that no HTTP client reads a gRPC error's 200 as a success.
      stream.respond({ ':status': 415, 'content-type': 'text/plain' }, { endStream: true });
      if (!stream.readableEnded) stream.close(constants.NGHTTP2_NO_ERROR);
      return;
    }
    const path = headers[':path'] ?? '';
    const method = this.methods.get(path);
    if (method === undefined || headers[':method'] !== 'POST') {
      endWithStatus(stream, GrpcStatus.UNIMPLEMENTED, `unknown method ${JSON.stringify(path)}`);
      return;
    }
    const encoding = headers['grpc-encoding'] as string | undefined;
    let timeout: number | undefined;
    try {
      checkEncoding(encoding);
      timeout = parseTimeout(headers['grpc-timeout'] as string | undefined);
    } catch (err) {
      endWithError(stream, err);
      return;
    }
    new Call(stream, method, encoding, this.maxMessageBytes, timeout, this.deadlines);
  }

  /** Binds `host:port` (0: a free port); resolves with the bound port. */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const failed = (err: Error) => reject(err);
      this.server.once('error', failed);
      this.server.listen(port, host, () => {
        this.server.off('error', failed);
        resolve((this.server.address() as AddressInfo).port);
      });
    });
  }

  /**
   * Takes no new connection or call (GOAWAY on every connection), lets the calls in flight end,
   * and past `timeoutMs` cancels what is left (the connections are destroyed).
   */
  close(timeoutMs: number): Promise<void> {
    this.draining = true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        for (const session of this.sessions) session.destroy(undefined, constants.NGHTTP2_CANCEL);
      }, timeoutMs);
      timer.unref();
      this.server.close(() => {
        clearTimeout(timer);
        resolve();
      });
      for (const session of this.sessions) session.close();
    });
  }
}

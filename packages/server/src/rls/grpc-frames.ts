import { gunzipSync, inflateSync } from 'node:zlib';

/**
 * gRPC over HTTP/2 as the rate limit service speaks it (grpc/grpc doc/PROTOCOL-HTTP2.md): the
 * status codes, the 5-byte length prefix of a message, the `grpc-timeout` header, the
 * percent-encoded `grpc-message`, and reading the one request message of a call. Pure: no
 * streams, no sockets.
 */

/** The gRPC status codes the service answers with (grpc/grpc doc/statuscodes.md). */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

/** A call's end other than OK: its status code and message, sent as `grpc-status`/`grpc-message`. */
export class GrpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** The message encodings a request may use (`grpc-encoding`), as sent in `grpc-accept-encoding`. */
export const ACCEPT_ENCODING = 'identity,deflate,gzip';

const PREFIX = 5;

/** A message with its gRPC prefix: compressed-flag 0, then the length (4 bytes, big-endian). */
export function frame(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(PREFIX + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  out.set(message, PREFIX);
  return out;
}

const TIMEOUT_UNITS: Readonly<Record<string, number>> = {
  H: 3_600_000,
  M: 60_000,
  S: 1000,
  m: 1,
  u: 0.001,
  n: 0.000_001,
};

/**
 * `grpc-timeout` (at most 8 digits, then H, M, S, m, u or n) in ms; undefined when absent (no
 * deadline). A malformed value is a GrpcError (INTERNAL), as grpc-js's server answers it.
 */
export function parseTimeout(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  // Envoy sends its filter's one timeout on every call: the last value read is read once.
  if (value === lastTimeout.value) return lastTimeout.ms;
  const match = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (match === null)
    throw new GrpcError(GrpcStatus.INTERNAL, `invalid grpc-timeout ${JSON.stringify(value)}`);
  const ms = Number(match[1]) * TIMEOUT_UNITS[match[2]!]!;
  lastTimeout = { value, ms };
  return ms;
}

let lastTimeout: { value: string | undefined; ms: number } = { value: undefined, ms: 0 };

/** `grpc-message`'s percent-encoding: bytes outside space..~ (and '%') as %XX of their UTF-8. */
export function encodeStatusMessage(message: string): string {
  // The common case (ASCII without '%') goes out as it is.
  if (!/[^\x20-\x24\x26-\x7e]/.test(message)) return message;
  let out = '';
  for (const byte of Buffer.from(message, 'utf8')) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/**
 * Refuses a `grpc-encoding` the service cannot read: UNIMPLEMENTED, as grpc/grpc
 * doc/compression.md asks (the reply carries `grpc-accept-encoding`).
 */
export function checkEncoding(encoding: string | undefined): void {
  if (encoding === undefined || encoding === 'identity' || encoding === 'gzip' || encoding === 'deflate')
    return;
  throw new GrpcError(GrpcStatus.UNIMPLEMENTED, `unsupported grpc-encoding ${JSON.stringify(encoding)}`);
}

function tooLarge(size: number, max: number): GrpcError {
  return new GrpcError(
    GrpcStatus.RESOURCE_EXHAUSTED,
    `request message of ${size} bytes is larger than maxMessageBytes (${max})`,
  );
}

/**
 * The request body of a call so far: refuses, as soon as its prefix announces it, a message past
 * `maxBytes` (RESOURCE_EXHAUSTED), so an oversized body is never buffered whole.
 */
export function checkAnnounced(body: Buffer, maxBytes: number): void {
  if (body.length >= PREFIX) {
    const length = body.readUInt32BE(1);
    if (length > maxBytes) throw tooLarge(length, maxBytes);
  }
}

/** The request body so far: past one prefixed message of `maxBytes`, RESOURCE_EXHAUSTED. */
export function checkBodySize(size: number, maxBytes: number): void {
  if (size > PREFIX + maxBytes) {
    throw new GrpcError(
      GrpcStatus.RESOURCE_EXHAUSTED,
      `request body of ${size} bytes is past one message of maxMessageBytes (${maxBytes})`,
    );
  }
}

/**
 * The one message of a unary or server-streaming request, from its whole body: the prefix checked
 * (INTERNAL for a truncated frame, no message or a second one; a compressed flag without an
 * encoding is INTERNAL too, PROTOCOL-HTTP2.md: "If the Message-Encoding header is omitted then the
 * Compressed-Flag must be 0"), decompressed with the call's `grpc-encoding` within `maxBytes`.
 */
export function readMessage(body: Buffer, encoding: string | undefined, maxBytes: number): Buffer {
  if (body.length === 0) throw new GrpcError(GrpcStatus.INTERNAL, 'the request carried no message');
  if (body.length < PREFIX) {
    throw new GrpcError(
      GrpcStatus.INTERNAL,
      `truncated message frame: ${body.length} bytes of a 5-byte prefix`,
    );
  }
  const flag = body[0];
  const length = body.readUInt32BE(1);
  if (length > maxBytes) throw tooLarge(length, maxBytes);
  if (body.length < PREFIX + length) {
    throw new GrpcError(
      GrpcStatus.INTERNAL,
      `truncated message frame: ${length} bytes announced, ${body.length - PREFIX} received`,
    );
  }
  if (body.length > PREFIX + length) {
    throw new GrpcError(GrpcStatus.INTERNAL, 'a second request message on a call that takes one');
  }
  const message = body.subarray(PREFIX);
  if (flag === 0) return message;
  if (flag !== 1) throw new GrpcError(GrpcStatus.INTERNAL, `invalid compressed flag ${flag}`);
  if (encoding === undefined || encoding === 'identity') {
    throw new GrpcError(GrpcStatus.INTERNAL, 'compressed message without a grpc-encoding');
  }
  try {
    const inflate = encoding === 'gzip' ? gunzipSync : inflateSync;
    return inflate(message, { maxOutputLength: maxBytes });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new GrpcError(
        GrpcStatus.RESOURCE_EXHAUSTED,
        `decompressed request message is larger than maxMessageBytes (${maxBytes})`,
      );
    }
    throw new GrpcError(
      GrpcStatus.INTERNAL,
      `could not decompress the ${encoding} message: ${(err as Error).message}`,
    );
  }
}

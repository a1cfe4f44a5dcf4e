import { GrpcError, GrpcStatus } from './grpc-frames.js';
import type { DescriptorStatus, RateLimitRequest, RateLimitResponse } from './should-rate-limit.js';
import { utf8Size } from './utf8-size.js';

/**
 * ShouldRateLimit's two messages on the wire (protobuf encoding of Envoy's rls.proto), by hand for
 * the fields the service reads and writes. protobufjs's reflection built two object trees per
 * message (decode then toObject, fromObject then encode), about a twentieth of a call's CPU; this
 * reads straight into the object proto.ts's LOADER_OPTIONS gave (proto field names, enums and
 * 64-bit integers as numbers, absent fields as their defaults) and writes the answer in one
 * buffer. test/server/rls-codec.test.ts holds it to protobufjs on the same .proto files.
 */

// Wire types (protobuf encoding: VARINT, I64, LEN, SGROUP, EGROUP, I32).
const VARINT = 0;
const I64 = 1;
const LEN = 2;
const SGROUP = 3;
const EGROUP = 4;
const I32 = 5;

class Malformed extends Error {}

/** A cursor over one message's bytes (`end`: where the message ends inside `buf`). */
class Reader {
  pos: number;
  constructor(
    readonly buf: Buffer,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
  }

  /** A varint's low 32 bits, unsigned (as uint32 and enum fields keep them). */
  uint32(): number {
    const buf = this.buf;
    let value = 0;
    for (let shift = 0; shift < 70; shift += 7) {
      if (this.pos >= this.end) throw new Malformed(`index out of range: ${this.pos} of ${this.end}`);
      const byte = buf[this.pos++]!;
      if (shift < 32) value |= (byte & 0x7f) << shift;
      if (byte < 0x80) return value >>> 0;
    }
    throw new Malformed('invalid varint encoding');
  }

  /** A varint as an unsigned 64-bit number (above 2^53 it loses precision, as longs: Number does). */
  uint64(): number {
    const buf = this.buf;
    let lo = 0;
    let hi = 0;
    for (let shift = 0; shift < 70; shift += 7) {
      if (this.pos >= this.end) throw new Malformed(`index out of range: ${this.pos} of ${this.end}`);
      const byte = buf[this.pos++]!;
      const bits = byte & 0x7f;
      if (shift < 28) lo |= bits << shift;
      else if (shift === 28) {
        lo |= (bits & 0x0f) << 28;
        hi |= bits >>> 4;
      } else if (shift < 64) hi |= bits << (shift - 32);
      if (byte < 0x80) return (hi >>> 0) * 0x1_0000_0000 + (lo >>> 0);
    }
    throw new Malformed('invalid varint encoding');
  }

  /** A length-delimited field's end, its bytes checked to be there. */
  delimited(): number {
    const length = this.uint32();
    const end = this.pos + length;
    if (end > this.end) throw new Malformed(`index out of range: ${this.pos} + ${length} > ${this.end}`);
    return end;
  }

  string(): string {
    const end = this.delimited();
    const start = this.pos;
    this.pos = end;
    return utf8(this.buf, start, end);
  }

  /** Skips a field the service does not read (or one sent with another wire type than its own). */
  skip(valueType: number): void {
    switch (valueType) {
      case VARINT:
        this.uint32();
        return;
      case I64:
        this.advance(8);
        return;
      case LEN:
        this.pos = this.delimited();
        return;
      case SGROUP:
        for (;;) {
          const tag = this.uint32();
          if ((tag & 7) === EGROUP) return;
          this.skip(tag & 7);
        }
      case I32:
        this.advance(4);
        return;
      default:
        throw new Malformed(`invalid wire type ${valueType} at offset ${this.pos}`);
    }
  }

  /** A nested message's fields must end where its length said. */
  close(end: number): void {
    if (this.pos !== end) throw new Malformed(`a nested message overruns its length at offset ${end}`);
  }

  private advance(bytes: number): void {
    if (this.pos + bytes > this.end)
      throw new Malformed(`index out of range: ${this.pos} + ${bytes} > ${this.end}`);
    this.pos += bytes;
  }
}

/** UTF-8 bytes to a string: short ASCII ones (the descriptors Envoy sends) without a call into C++. */
function utf8(buf: Buffer, start: number, end: number): string {
  if (end - start <= 32) {
    let out = '';
    for (let i = start; i < end; i++) {
      const byte = buf[i]!;
      if (byte >= 0x80) return buf.toString('utf8', start, end);
      out += String.fromCharCode(byte);
    }
    return out;
  }
  return buf.toString('utf8', start, end);
}

type Descriptor = RateLimitRequest['descriptors'][number];

function readEntry(r: Reader, end: number): { key: string; value: string } {
  const entry = { key: '', value: '' };
  while (r.pos < end) {
    const tag = r.uint32();
    const field = tag >>> 3;
    if (field === 1 && (tag & 7) === LEN) entry.key = r.string();
    else if (field === 2 && (tag & 7) === LEN) entry.value = r.string();
    else r.skip(tag & 7);
  }
  r.close(end);
  return entry;
}

function readOverride(r: Reader, end: number): { requests_per_unit: number; unit: number } {
  const limit = { requests_per_unit: 0, unit: 0 };
  while (r.pos < end) {
    const tag = r.uint32();
    const field = tag >>> 3;
    if (field === 1 && (tag & 7) === VARINT) limit.requests_per_unit = r.uint32();
    else if (field === 2 && (tag & 7) === VARINT)
      limit.unit = r.uint32() | 0; // an enum is an int32
    else r.skip(tag & 7);
  }
  r.close(end);
  return limit;
}

function readUInt64Value(r: Reader, end: number): { value: number } {
  const wrapper = { value: 0 };
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag >>> 3 === 1 && (tag & 7) === VARINT) wrapper.value = r.uint64();
    else r.skip(tag & 7);
  }
  r.close(end);
  return wrapper;
}

function readDescriptor(r: Reader, end: number): Descriptor {
  const descriptor: Descriptor = { entries: [], limit: null, hits_addend: null };
  while (r.pos < end) {
    const tag = r.uint32();
    const field = tag >>> 3;
    if ((tag & 7) !== LEN || field < 1 || field > 3) {
      r.skip(tag & 7);
      continue;
    }
    const inner = r.delimited();
    // A message field sent twice: the last one, as protobufjs's decoder keeps it.
    if (field === 1) descriptor.entries.push(readEntry(r, inner));
    else if (field === 2) descriptor.limit = readOverride(r, inner);
    else descriptor.hits_addend = readUInt64Value(r, inner);
  }
  r.close(end);
  return descriptor;
}

/** RateLimitRequest's bytes to the object the service reads; malformed bytes are INTERNAL. */
export function decodeRateLimitRequest(bytes: Buffer): RateLimitRequest {
  const r = new Reader(bytes, 0, bytes.length);
  const request: RateLimitRequest = { domain: '', descriptors: [], hits_addend: 0 };
  try {
    while (r.pos < r.end) {
      const tag = r.uint32();
      const field = tag >>> 3;
      const valueType = tag & 7;
      if (field === 1 && valueType === LEN) request.domain = r.string();
      else if (field === 2 && valueType === LEN) {
        const inner = r.delimited();
        request.descriptors.push(readDescriptor(r, inner));
      } else if (field === 3 && valueType === VARINT) request.hits_addend = r.uint32();
      else r.skip(valueType);
    }
  } catch (err) {
    if (!(err instanceof Malformed)) throw err;
    throw new GrpcError(
      GrpcStatus.INTERNAL,
      `could not deserialize the RateLimitRequest message: ${err.message}`,
    );
  }
  return request;
}

// Encoding: sizes first, then one buffer written front to back. Fields at their proto3 default
// (0, '') are left out, as protobuf's own encoders do; a message field present is written even
// when empty.

/** Bytes of a varint; a negative int32 or int64 takes 10 (its 64-bit two's complement). */
function varintSize(n: number): number {
  if (n < 0) return 10;
  if (n < 0x80) return 1;
  if (n < 0x4000) return 2;
  if (n < 0x20_0000) return 3;
  if (n < 0x1000_0000) return 4;
  let size = 5;
  for (let rest = Math.floor(n / 0x8_0000_0000); rest > 0; rest = Math.floor(rest / 0x80)) size++;
  return size;
}

/** The values fromObject gave the fields: uint32 `>>> 0`, int32 `| 0`, int64 a whole number. */
const u32 = (n: number) => n >>> 0;
const int32 = (n: number) => n | 0;
const int64 = (n: number) => Math.trunc(n);

class Writer {
  pos = 0;
  constructor(readonly buf: Buffer) {}

  varint(n: number): void {
    const buf = this.buf;
    if (n < 0) {
      let lo = n >>> 0;
      let hi = Math.floor(n / 0x1_0000_0000) >>> 0;
      while (hi > 0 || lo >= 0x80) {
        buf[this.pos++] = (lo & 0x7f) | 0x80;
        lo = ((lo >>> 7) | (hi << 25)) >>> 0;
        hi >>>= 7;
      }
      buf[this.pos++] = lo;
      return;
    }
    while (n >= 0x80) {
      buf[this.pos++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    buf[this.pos++] = n;
  }

  /** A field's tag then its varint value, left out at 0. */
  field(tag: number, n: number): void {
    if (n === 0) return;
    this.buf[this.pos++] = tag;
    this.varint(n);
  }

  string(tag: number, s: string, size: number): void {
    if (size === 0) return;
    this.buf[this.pos++] = tag;
    this.varint(size);
    if (size === s.length) {
      for (let i = 0; i < s.length; i++) this.buf[this.pos++] = s.charCodeAt(i);
    } else {
      this.pos += this.buf.write(s, this.pos, 'utf8');
    }
  }
}

const scalar = (n: number) => (n === 0 ? 0 : 1 + varintSize(n));
const len = (size: number) => 1 + varintSize(size) + size;

function limitSize(l: NonNullable<DescriptorStatus['current_limit']>, name: number): number {
  return scalar(u32(l.requests_per_unit)) + scalar(int32(l.unit)) + (name === 0 ? 0 : len(name));
}

function durationSize(d: NonNullable<DescriptorStatus['duration_until_reset']>): number {
  return scalar(int64(d.seconds)) + scalar(int32(d.nanos));
}

function statusSize(s: DescriptorStatus, nameSize: number): number {
  let size = scalar(int32(s.code)) + scalar(u32(s.limit_remaining));
  if (s.current_limit !== undefined) size += len(limitSize(s.current_limit, nameSize));
  if (s.duration_until_reset !== undefined) size += len(durationSize(s.duration_until_reset));
  return size;
}

/**
 * RateLimitResponse as protobuf bytes; `framed`: after the 5 bytes of gRPC's message prefix
 * (uncompressed, the length), so the answer goes out as it is written, not copied into a frame.
 */
export function encodeRateLimitResponse(response: RateLimitResponse, framed = false): Buffer {
  const { statuses, response_headers_to_add: headers } = response;
  const names = statuses.map((s) => (s.current_limit === undefined ? 0 : utf8Size(s.current_limit.name)));
  const headerSizes = headers.map((h) => [utf8Size(h.key), utf8Size(h.value)] as const);
  let size = scalar(int32(response.overall_code));
  for (let i = 0; i < statuses.length; i++) size += len(statusSize(statuses[i]!, names[i]!));
  for (const [k, v] of headerSizes) size += len((k === 0 ? 0 : len(k)) + (v === 0 ? 0 : len(v)));

  const w = new Writer(Buffer.allocUnsafe(framed ? size + 5 : size));
  if (framed) {
    w.buf[0] = 0;
    w.buf.writeUInt32BE(size, 1);
    w.pos = 5;
  }
  w.field(0x08, int32(response.overall_code));
  for (let i = 0; i < statuses.length; i++) {
    const s = statuses[i]!;
    const name = names[i]!;
    w.buf[w.pos++] = 0x12;
    w.varint(statusSize(s, name));
    w.field(0x08, int32(s.code));
    if (s.current_limit !== undefined) {
      const l = s.current_limit;
      w.buf[w.pos++] = 0x12;
      w.varint(limitSize(l, name));
      w.field(0x08, u32(l.requests_per_unit));
      w.field(0x10, int32(l.unit));
      w.string(0x1a, l.name, name);
    }
    w.field(0x18, u32(s.limit_remaining));
    if (s.duration_until_reset !== undefined) {
      const d = s.duration_until_reset;
      w.buf[w.pos++] = 0x22;
      w.varint(durationSize(d));
      w.field(0x08, int64(d.seconds));
      w.field(0x10, int32(d.nanos));
    }
  }
  for (let i = 0; i < headers.length; i++) {
    const [k, v] = headerSizes[i]!;
    w.buf[w.pos++] = 0x1a;
    w.varint((k === 0 ? 0 : len(k)) + (v === 0 ? 0 : len(v)));
    w.string(0x0a, headers[i]!.key, k);
    w.string(0x12, headers[i]!.value, v);
  }
  return w.buf;
}

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GrpcError } from '../../packages/server/src/rls/grpc-frames.js';
import { loadProtos } from '../../packages/server/src/rls/proto.js';
import { decodeRateLimitRequest, encodeRateLimitResponse } from '../../packages/server/src/rls/rls-codec.js';
import type { RateLimitRequest, RateLimitResponse } from '../../packages/server/src/rls/should-rate-limit.js';

// The hand-written ShouldRateLimit codec against protobufjs reading the same .proto files with the
// options the service used before it (proto.ts's LOADER_OPTIONS): the same objects from the same
// bytes, bytes protobufjs reads back as what was written. Seeded, so a failure is replayable.

const protos = loadProtos();
const SEED = 20_261_128;

const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }), // UTF-8 past ASCII, and past 32 bytes
  fc.constantFrom('', 'client', 'x'.repeat(200)),
);
const uint32 = fc.oneof(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 0xffff_ffff }));
const descriptor = fc.record(
  {
    entries: fc.array(fc.record({ key: text, value: text }), { maxLength: 4 }),
    limit: fc.record({ requests_per_unit: uint32, unit: fc.integer({ min: 0, max: 7 }) }),
    hits_addend: fc.record({
      value: fc.oneof(fc.nat(1000), fc.maxSafeNat(), fc.constant(2 ** 60)),
    }),
  },
  { requiredKeys: ['entries'] },
);
const request = fc.record({
  domain: text,
  descriptors: fc.array(descriptor, { maxLength: 4 }),
  hits_addend: uint32,
});

function published(value: unknown): Buffer {
  return Buffer.from(protos.rateLimitRequest.encode(value as RateLimitRequest));
}

describe('decodeRateLimitRequest', () => {
  it('reads what protobufjs reads, defaults and 64-bit numbers included', () => {
    fc.assert(
      fc.property(request, (value) => {
        const bytes = published(value);
        expect(decodeRateLimitRequest(bytes)).toEqual(protos.rateLimitRequest.decode(bytes));
      }),
      { numRuns: 500, seed: SEED },
    );
  });

  it('skips unknown fields of every wire type, at the top and inside a descriptor', () => {
    const unknown = Buffer.from([
      ...[0x78, 0x96, 0x01], // field 15, varint
      ...[0x79, 1, 2, 3, 4, 5, 6, 7, 8], // field 15, 64-bit
      ...[0x7a, 0x02, 0xaa, 0xbb], // field 15, length-delimited
      ...[0x7d, 1, 2, 3, 4], // field 15, 32-bit
      ...[0x7b, 0x08, 0x01, 0x7c], // field 15, a group holding a varint
      ...[0x08, 0x05], // domain (field 1) as a varint: not its wire type, skipped
    ]);
    const entry = Buffer.concat([Buffer.from([0x0a, 0x01, 0x6b, 0x12, 0x01, 0x76]), unknown]);
    const desc = Buffer.concat([Buffer.from([0x0a, entry.length]), entry, unknown]);
    const bytes = Buffer.concat([
      Buffer.from([0x0a, 0x03, 0x61, 0x70, 0x70]),
      unknown,
      Buffer.from([0x12, desc.length]),
      desc,
    ]);
    const ours = decodeRateLimitRequest(bytes);
    expect(ours).toEqual({
      domain: 'app',
      descriptors: [{ entries: [{ key: 'k', value: 'v' }], limit: null, hits_addend: null }],
      hits_addend: 0,
    });
  });

  it('every truncation of a message: INTERNAL wherever protobufjs throws, else its object or INTERNAL', () => {
    // protobufjs clamps a string cut short in a Buffer instead of throwing: there this codec is
    // stricter (INTERNAL); it never answers an object protobufjs would not.
    fc.assert(
      fc.property(request, (value) => {
        const bytes = published(value);
        for (let cut = 0; cut < bytes.length; cut++) {
          const part = bytes.subarray(0, cut);
          let theirs: unknown;
          try {
            theirs = protos.rateLimitRequest.decode(part);
          } catch {
            theirs = undefined;
          }
          let ours: unknown;
          try {
            ours = decodeRateLimitRequest(part);
          } catch (err) {
            expect(err).toBeInstanceOf(GrpcError);
            expect((err as GrpcError).code).toBe(13);
            expect((err as GrpcError).message).toMatch(
              /^could not deserialize the RateLimitRequest message: /,
            );
            continue;
          }
          expect(theirs).toBeDefined();
          expect(ours).toEqual(theirs);
        }
      }),
      { numRuns: 60, seed: SEED },
    );
  });

  it('a nested message whose fields run past its length, and a varint of 11 bytes: INTERNAL', () => {
    // descriptors: 2 bytes announced, holding an entry that announces 5.
    const overrun = Buffer.from([0x12, 0x02, 0x0a, 0x05, 0x0a, 0x01, 0x6b, 0x12, 0x01]);
    const varint = Buffer.from([0x18, ...Array(10).fill(0xff), 0x01]);
    for (const bytes of [overrun, varint]) {
      expect(() => decodeRateLimitRequest(bytes)).toThrow(/could not deserialize the RateLimitRequest/);
    }
  });
});

const status = fc.record(
  {
    code: fc.integer({ min: 0, max: 2 }),
    current_limit: fc.record({
      name: text,
      requests_per_unit: uint32,
      unit: fc.integer({ min: 0, max: 7 }),
    }),
    limit_remaining: uint32,
    duration_until_reset: fc.record({
      seconds: fc.oneof(fc.nat(100_000), fc.maxSafeNat()),
      nanos: fc.integer({ min: 0, max: 999_999_999 }),
    }),
  },
  { requiredKeys: ['code', 'limit_remaining'] },
);
const response = fc.record({
  overall_code: fc.integer({ min: 0, max: 2 }),
  statuses: fc.array(status, { maxLength: 5 }),
  response_headers_to_add: fc.array(fc.record({ key: text, value: text }), { maxLength: 3 }),
});

describe('encodeRateLimitResponse', () => {
  it('writes bytes protobufjs reads as it reads its own encoding of the same answer', () => {
    fc.assert(
      fc.property(response, (value) => {
        const answer = value as RateLimitResponse;
        const theirs = protos.rateLimitResponse.decode(protos.rateLimitResponse.encode(answer));
        expect(protos.rateLimitResponse.decode(encodeRateLimitResponse(answer))).toEqual(theirs);
      }),
      { numRuns: 500, seed: SEED },
    );
  });

  it('a negative enum or nanos goes out as its 10-byte two’s complement, read back as written', () => {
    const answer: RateLimitResponse = {
      overall_code: -1,
      statuses: [{ code: 1, limit_remaining: 3, duration_until_reset: { seconds: 1, nanos: -5 } }],
      response_headers_to_add: [],
    };
    const bytes = encodeRateLimitResponse(answer);
    expect(bytes.subarray(0, 11)).toEqual(Buffer.from([0x08, ...Array(9).fill(0xff), 0x01]));
    const back = protos.rateLimitResponse.decode(bytes) as unknown as RateLimitResponse;
    expect(back.overall_code).toBe(-1);
    expect(back.statuses[0]!.duration_until_reset).toEqual({ seconds: 1, nanos: -5 });
  });
});

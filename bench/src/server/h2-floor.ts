/**
 * The floor of the RLS benchmark: `node:http2` answering the gRPC exchange a ShouldRateLimit call
 * is, with no service behind it. It reads the request body whole, then answers as sluice-server's
 * gRPC path does (200 and `application/grpc`, no `date`, one framed message, trailers with
 * `grpc-status: 0`), the message a constant RateLimitResponse (overall OK, one OK status with 5
 * remaining). What the service adds to a call is then the distance to this floor, measured beside
 * it in the same run on the same core, which the machine's noise moves far less than the rates.
 *
 *   node bench/src/server/h2-floor.ts PORT     (prints `listening` when it is)
 */
import { createServer, type ServerHttp2Stream } from 'node:http2';

const OK_HEADERS = { ':status': 200, 'content-type': 'application/grpc' };
const OK_TRAILERS = { 'grpc-status': '0' };
const WAIT_FOR_TRAILERS = { waitForTrailers: true, sendDate: false };
// RateLimitResponse { overall_code: OK, statuses: [{ code: OK, limit_remaining: 5 }] }, framed.
const ANSWER = Buffer.from([0, 0, 0, 0, 8, 0x08, 0x01, 0x12, 0x04, 0x08, 0x01, 0x18, 0x05]);

function sendOkTrailers(this: ServerHttp2Stream): void {
  this.sendTrailers(OK_TRAILERS);
}

const server = createServer({ maxSessionMemory: Number.MAX_SAFE_INTEGER });
server.on('stream', (stream) => {
  stream.on('error', () => {});
  stream.on('data', () => {});
  stream.on('end', () => {
    stream.respond(OK_HEADERS, WAIT_FOR_TRAILERS);
    stream.on('wantTrailers', sendOkTrailers);
    stream.end(ANSWER);
  });
});
server.listen(Number(process.argv[2]), '127.0.0.1', () => process.stderr.write('listening\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));

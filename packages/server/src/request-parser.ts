/** A request the server cannot read: the connection is answered with this reason and closed. */
export class ProtocolError extends Error {}

const STAR = 0x2a;
const DOLLAR = 0x24;
const CR = 0x0d;
const LF = 0x0a;
const MINUS = 0x2d;

/** Digits of the longest length line read (a sign and 2^53's 16 digits, with room): longer is garbage. */
const MAX_LENGTH_CHARS = 20;

/** Redis's own bound on the arguments of one command (`*<n>` above it is invalid). */
const MAX_MULTIBULK = 1024 * 1024;

/** A length line `<digits>\r\n` read at `start`: its value and where the next line begins. */
interface Length {
  readonly value: number;
  readonly next: number;
}

/**
 * Reads the decimal integer of a length line as Redis's string2ll does: an optional `-`, then
 * digits, nothing else (`abc`, `1.5`, `+1`, a 20-digit number are refused). `undefined` when the
 * line is not complete yet.
 */
function readLength(buf: Buffer, start: number, what: string): Length | undefined {
  let pos = start;
  const negative = buf[pos] === MINUS;
  if (negative) pos++;
  let value = 0;
  let digits = 0;
  for (; pos < buf.length; pos++) {
    const c = buf[pos]!;
    if (c === CR) {
      if (pos + 1 >= buf.length) return undefined;
      if (buf[pos + 1] !== LF || digits === 0 || !Number.isSafeInteger(value)) break;
      return { value: negative ? -value : value, next: pos + 2 };
    }
    if (c < 0x30 || c > 0x39 || ++digits > MAX_LENGTH_CHARS) break;
    value = value * 10 + (c - 0x30);
  }
  if (pos >= buf.length) return undefined;
  throw new ProtocolError(`invalid ${what} length`);
}

/**
 * The RESP2 request reader: `*<n>\r\n` followed by n bulk strings `$<len>\r\n<bytes>\r\n`, the
 * form every client library and redis-cli send (inline commands are not read). Lengths are
 * checked as Redis checks them, with its error texts; a bulk string longer than `maxFrameBytes`,
 * or that many bytes buffered without a complete command, is refused at once rather than
 * buffered. Arguments are views into the received chunks, not copies.
 */
export class RequestParser {
  private buffer: Buffer | undefined;
  private offset = 0;

  constructor(private readonly maxFrameBytes: number) {}

  /** Adds received bytes after what is still unread. */
  push(chunk: Buffer): void {
    const buf = this.buffer;
    if (buf === undefined || this.offset >= buf.length) {
      this.buffer = chunk;
      this.offset = 0;
      return;
    }
    this.buffer = Buffer.concat([buf.subarray(this.offset), chunk]);
    this.offset = 0;
  }

  /** Whether unread bytes remain (a command not complete yet, or not read yet). */
  get pending(): boolean {
    return this.buffer !== undefined && this.offset < this.buffer.length;
  }

  /** The arguments of the next complete command, or `undefined` when none is complete yet. */
  next(): Buffer[] | undefined {
    const buf = this.buffer;
    if (buf === undefined) return undefined;
    for (;;) {
      const start = this.offset;
      if (start >= buf.length) {
        this.buffer = undefined;
        this.offset = 0;
        return undefined;
      }
      if (buf[start] !== STAR) {
        throw new ProtocolError(`expected '*', got '${String.fromCharCode(buf[start]!)}'`);
      }
      const count = readLength(buf, start + 1, 'multibulk');
      if (count === undefined) return this.incomplete(start);
      if (count.value > MAX_MULTIBULK) throw new ProtocolError('invalid multibulk length');
      if (count.value <= 0) {
        // Redis skips an empty or null multibulk without a reply.
        this.offset = count.next;
        continue;
      }
      const args: Buffer[] = [];
      let pos = count.next;
      while (args.length < count.value) {
        if (pos >= buf.length) return this.incomplete(start);
        if (buf[pos] !== DOLLAR) {
          throw new ProtocolError(`expected '$', got '${String.fromCharCode(buf[pos]!)}'`);
        }
        const length = readLength(buf, pos + 1, 'bulk');
        if (length === undefined) return this.incomplete(start);
        if (length.value < 0) throw new ProtocolError('invalid bulk length');
        if (length.value > this.maxFrameBytes) throw this.tooLarge();
        const end = length.next + length.value;
        if (end + 2 > buf.length) return this.incomplete(start);
        args.push(buf.subarray(length.next, end));
        pos = end + 2;
      }
      this.offset = pos;
      return args;
    }
  }

  /** The command starting at `start` is not all here yet: wait for more, unless it is already too large. */
  private incomplete(start: number): undefined {
    if (this.buffer!.length - start > this.maxFrameBytes) throw this.tooLarge();
    this.offset = start;
    return undefined;
  }

  private tooLarge(): ProtocolError {
    return new ProtocolError(`frame larger than ${this.maxFrameBytes} bytes (max-frame-bytes)`);
  }
}

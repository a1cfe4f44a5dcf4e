/**
 * RESP2 reply encoders. Replies are built as strings (ASCII framing around UTF-8 or binary text) or
 * Buffers and written in one batch per socket turn; a bulk string's length is its byte length.
 */

export type Reply = string | Buffer;

export const OK: Reply = '+OK\r\n';
export const NIL: Reply = '$-1\r\n';

export function simple(text: string): Reply {
  return `+${text}\r\n`;
}

/** An error reply. CR and LF would end the line early, so they become spaces. */
export function error(text: string): Reply {
  return `-${text.replace(/[\r\n]/g, ' ')}\r\n`;
}

export function integer(value: number): Reply {
  return `:${Math.trunc(value)}\r\n`;
}

export function bulk(value: string | Buffer): Reply {
  if (typeof value === 'string') return `$${Buffer.byteLength(value)}\r\n${value}\r\n`;
  return Buffer.concat([Buffer.from(`$${value.length}\r\n`), value, Buffer.from('\r\n')]);
}

export function array(items: readonly Reply[]): Reply {
  if (items.every((item) => typeof item === 'string')) return `*${items.length}\r\n${items.join('')}`;
  return Buffer.concat([Buffer.from(`*${items.length}\r\n`), ...items.map(toBuffer)]);
}

export function toBuffer(reply: Reply): Buffer {
  return typeof reply === 'string' ? Buffer.from(reply) : reply;
}

/**
 * A string's UTF-8 length: its own length when it is ASCII (no call into C++ for the short ones).
 * Used by the request's validation (should-rate-limit.ts) and the answer's encoder (rls-codec.ts).
 */
export function utf8Size(s: string): number {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return Buffer.byteLength(s, 'utf8');
  return s.length;
}

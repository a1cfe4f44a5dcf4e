/**
 * Bytes as unpadded base64url (RFC 4648 §5), the same text as Node's
 * `Buffer#toString('base64url')`, through the web's `btoa`, which every runtime has (`Buffer` is
 * Node's).
 */
export function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

import { isIPv6 } from 'node:net';
import type { FastifyRequest } from 'fastify';

/** The IPv6 prefix @fastify/rate-limit keys a client by, unless `ipv6Subnet` says otherwise. */
export const DEFAULT_IPV6_SUBNET = 64;

/** `ipv6Subnet` as @fastify/rate-limit reads it: a finite number in [0, 128], truncated, else 64. */
export function ipv6SubnetOf(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= 128
    ? Math.trunc(value)
    : DEFAULT_IPV6_SUBNET;
}

/** The eight 16-bit groups of an IPv6 address (`isIPv6` already said it is one). */
function groupsOf(ip: string): number[] {
  let text = ip.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted !== null) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (part: string) =>
    part === '' ? [] : part.split(':').map((group) => Number.parseInt(group, 16));
  const front = parse(head);
  if (tail === undefined) return front;
  const back = parse(tail);
  return [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
}

/** RFC 5952's text: lower case, no leading zeros, the longest run of two or more zero groups as `::`. */
function formatGroups(groups: readonly number[]): string {
  let best = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) [best, bestLength] = [i, j - i];
    i = j;
  }
  const hex = groups.map((group) => group.toString(16));
  if (best === -1) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLength).join(':')}`;
}

/**
 * A client address as @fastify/rate-limit keys it: IPv4 (and any non-IPv6 text) in lower case, an
 * IPv4-mapped IPv6 address as its IPv4 address, other IPv6 addresses as the first address of
 * their `/ipv6Subnet` network in RFC 5952 form (`'2001:db8:abcd:12::'` for any address of that /64).
 * @example normalizeIP('::ffff:192.0.2.1') // '192.0.2.1'
 */
export function normalizeIP(ip: string, ipv6Subnet: number = DEFAULT_IPV6_SUBNET): string {
  if (!isIPv6(ip)) return ip.toLowerCase();
  const groups = groupsOf(ip);
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    const [high, low] = [groups[6]!, groups[7]!];
    return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  }
  const bits = ipv6SubnetOf(ipv6Subnet);
  const masked = groups.map((group, index) => {
    const kept = Math.min(16, Math.max(0, bits - index * 16));
    return kept === 16 ? group : group & ((0xffff << (16 - kept)) & 0xffff);
  });
  return formatGroups(masked);
}

/** The default key: the request's address (under the app's `trustProxy`), normalized. */
export function defaultPeerKey(request: FastifyRequest, ipv6Subnet: number): string {
  return normalizeIP(request.ip, ipv6Subnet);
}

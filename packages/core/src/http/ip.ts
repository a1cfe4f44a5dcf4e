import ipaddr from 'ipaddr.js';
import { describeValue, ErrorCode, SluiceError } from '../errors.js';

/**
 * The key part for a client address. IPv4 (and IPv4-mapped IPv6, `::ffff:1.2.3.4`) is the address
 * itself; IPv6 is its network prefix (`2001:db8:0:100::/56`), because one subscriber is handed a
 * whole /48–/64 and could otherwise rotate through addresses to escape the limit.
 * Returns `undefined` for text that is not an address.
 */
export function clientAddress(ip: string, ipv6Subnet: number): string | undefined {
  // Fast path: a dotted quad needs no parsing; the framework only hands us valid addresses.
  if (ip.indexOf(':') === -1) return ip;
  if (ip.startsWith('::ffff:') && ip.indexOf('.') !== -1) return ip.slice(7);
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    address = ipaddr.parse(ip);
  } catch {
    return undefined;
  }
  if (address.kind() === 'ipv4') return address.toString();
  const v6 = address as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
  return `${networkPrefix(v6.parts, ipv6Subnet)}/${ipv6Subnet}`;
}

function networkPrefix(parts: readonly number[], bits: number): string {
  const masked = parts.map((part, i) => {
    const keep = bits - i * 16;
    if (keep >= 16) return part;
    if (keep <= 0) return 0;
    return part & (0xffff << (16 - keep)) & 0xffff;
  });
  return new ipaddr.IPv6(masked).toString();
}

/** A list of addresses and CIDR ranges, parsed once; `has` answers per request. */
export interface AddressList {
  has(ip: string | undefined): boolean;
}

/** Parses an allow-list at creation; a bad entry throws a coded error naming it. */
export function addressList(option: string, entries: readonly string[]): AddressList {
  if (!Array.isArray(entries)) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `${option} must be an array of IP addresses or CIDR ranges; got ${describeValue(entries)}`,
      { option, value: entries },
    );
  }
  const exact = new Set<string>();
  const ranges: [ipaddr.IPv4 | ipaddr.IPv6, number][] = [];
  entries.forEach((entry, i) => {
    const where = `${option}[${i}]`;
    if (typeof entry === 'string' && entry.includes('/') && ipaddr.isValidCIDR(entry)) {
      const [address, bits] = ipaddr.parseCIDR(entry);
      ranges.push([unmap(address), bits]);
    } else if (typeof entry === 'string' && ipaddr.isValid(entry)) {
      exact.add(unmap(ipaddr.parse(entry)).toNormalizedString());
    } else {
      throw new SluiceError(
        ErrorCode.INVALID_OPTION,
        `${where} must be an IP address or a CIDR range such as '10.0.0.0/8'; got ${describeValue(entry)}`,
        { option: where, value: entry },
      );
    }
  });
  if (exact.size === 0 && ranges.length === 0) return { has: () => false };
  return {
    has(ip) {
      if (ip === undefined || !ipaddr.isValid(ip)) return false;
      const address = unmap(ipaddr.parse(ip));
      if (exact.has(address.toNormalizedString())) return true;
      for (const [range, bits] of ranges) {
        if (range.kind() === address.kind() && address.match(range, bits)) return true;
      }
      return false;
    },
  };
}

function unmap(address: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  return address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()
    ? (address as ipaddr.IPv6).toIPv4Address()
    : address;
}

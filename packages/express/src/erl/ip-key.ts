import { clientAddress } from '@sluice/core/adapter';
import type { Request, Response } from 'express';
import type { ExpressRateLimitOptions } from './types.js';

/** The key of a request without a client address: such requests share one bucket rather than go unlimited. */
export const NO_ADDRESS_KEY = 'unknown-address';

/**
 * express-rate-limit's default key: `req.ip` (under the app's `trust proxy`), IPv6 by its
 * `ipv6Subnet` prefix (one subscriber holds a whole /48–/64), through sluice's `clientAddress`.
 */
export function ipKey(
  subnet: ExpressRateLimitOptions['ipv6Subnet'],
  noAddress: () => void,
): (req: Request, res: Response) => Promise<string> {
  return async (req, res) => {
    const ip = req.ip ?? req.socket?.remoteAddress;
    if (ip === undefined) {
      noAddress();
      return NO_ADDRESS_KEY;
    }
    if (ip.indexOf(':') === -1) return ip;
    const bits = typeof subnet === 'function' ? await subnet(req, res) : subnet;
    if (bits === false) return ip;
    if (typeof bits !== 'number' || !Number.isInteger(bits) || bits < 32 || bits > 64) {
      throw new TypeError(`ipv6Subnet answered ${String(bits)}; it must answer an integer from 32 to 64`);
    }
    return clientAddress(ip, bits) ?? ip;
  };
}

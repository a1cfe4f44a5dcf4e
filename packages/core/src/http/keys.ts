import { sha256 } from '@noble/hashes/sha2';
import { base64url } from '../base64url.js';
import { describeValue, ErrorCode, SluiceError } from '../errors.js';
import { assertKnownOptions, integerOption } from '../validate.js';
import { clientAddress } from './ip.js';

/** How far the app trusts `X-Forwarded-For`, as far as the adapter can tell. */
export type ProxyTrust = 'none' | 'some' | 'all';

/**
 * Configuration warnings, each given once per process (whichever middleware sees it first),
 * through that middleware's `onWarning` hook.
 */
export type WarningCode =
  | 'SLUICE_FORWARDED_UNTRUSTED'
  | 'SLUICE_TRUST_ALL_PROXIES'
  | 'SLUICE_ROUTE_UNKNOWN'
  | 'SLUICE_NO_CLIENT_ADDRESS'
  | 'SLUICE_TOKEN_HEADER';

/**
 * What a key needs from a request, supplied by each adapter so that keys are written once. Every
 * method is cheap: a property read on the framework's request.
 */
export interface RequestAccess<Req> {
  /** The framework's client address (`req.ip` / `request.ip`), which honours trust proxy. */
  ip(req: Req): string | undefined;
  /** The HTTP method, upper case. */
  method(req: Req): string;
  /** The matched route pattern (`/users/:id`), or `undefined` when there is none yet. */
  route(req: Req): string | undefined;
  /** A request header by lower-case name; repeated headers joined by the framework. */
  header(req: Req, name: string): string | undefined;
  /** Whether the app trusts proxies for this request's address. */
  proxyTrust(req: Req): ProxyTrust;
  /** Reports a configuration problem (the adapter's `onWarning` hook), once per process per code. */
  warn(code: WarningCode, message: string): void;
}

/**
 * Turns a request into the key a limit counts against. Returning `undefined` skips the limit for
 * this request (an anonymous user has no token). Custom keys ignore the second argument.
 * @example (req) => req.user?.id
 */
export type KeyFunction<Req> = (req: Req, access: RequestAccess<Req>) => string | undefined;

/** A key that works with any adapter's request type. */
export type AnyKey = <Req>(req: Req, access: RequestAccess<Req>) => string | undefined;

export interface ByIpOptions {
  /**
   * IPv6 clients are grouped by this network prefix length (bits), so one host cannot rotate
   * through the addresses of its subnet. ISPs hand out /48 to /64; /56 is the common case.
   * From 32 to 64.
   * @default 56
   */
  ipv6Subnet?: number;
}

/**
 * The client address as the framework resolved it (`req.ip`, honouring the app's trust-proxy
 * setting; `X-Forwarded-For` is never parsed here). IPv4-mapped IPv6 becomes IPv4; IPv6 is grouped
 * by `ipv6Subnet`. Warns once when `X-Forwarded-For` arrives but the app trusts no proxy (every
 * client behind the proxy would share one limit), and once when the app trusts every proxy (any
 * client can pick its own address).
 *
 * A request without a client address (a server on a Unix socket, Hono where the runtime gives
 * none, such as `app.request()` or workerd outside Cloudflare, without its `address` option, a
 * proxy forwarding text that is no address) is not limited by it, and the first one in the
 * process is reported (`SLUICE_NO_CLIENT_ADDRESS`): unlike a request without a
 * token for `byToken()`, this is a configuration to fix, never an intended skip.
 * @example byIp({ ipv6Subnet: 64 })
 */
export function byIp(options: ByIpOptions = {}): AnyKey {
  assertKnownOptions('byIp', options, ['ipv6Subnet'] satisfies (keyof ByIpOptions)[]);
  const subnet = integerOption('ipv6Subnet', options.ipv6Subnet ?? 56, 32, 64);
  let warnedUntrusted = false;
  let warnedAll = false;
  let warnedNone = false;
  return function byIpKey(req, access) {
    if (!warnedUntrusted || !warnedAll) {
      const trust = access.proxyTrust(req);
      if (!warnedAll && trust === 'all') {
        warnedAll = true;
        access.warn(
          'SLUICE_TRUST_ALL_PROXIES',
          'the app trusts every proxy, so any client can choose its own address with X-Forwarded-For and escape byIp(); trust only your proxies (a hop count or their addresses)',
        );
      } else if (
        !warnedUntrusted &&
        trust === 'none' &&
        access.header(req, 'x-forwarded-for') !== undefined
      ) {
        warnedUntrusted = true;
        access.warn(
          'SLUICE_FORWARDED_UNTRUSTED',
          'X-Forwarded-For arrived but the app trusts no proxy, so byIp() sees the address of the proxy and every client behind it shares one limit; if the app runs behind a proxy, tell the framework which proxies to trust (Express: trust proxy; Fastify: trustProxy; Koa: app.proxy; Hono: the address and proxyTrust options)',
        );
      }
    }
    const ip = access.ip(req);
    const address = ip === undefined || ip === '' ? undefined : clientAddress(ip, subnet);
    if (address !== undefined) return `ip:${address}`;
    if (!warnedNone) {
      warnedNone = true;
      access.warn(
        'SLUICE_NO_CLIENT_ADDRESS',
        `byIp() found no client address on a request (the framework gave ${shown(ip)}), so its limit did not apply, as for every request without one. Give the framework the address: on Hono where the runtime gives none, the address option; behind a proxy, trust it so that the framework reads the address it forwards (on a Unix socket the connection has none). Or key those requests otherwise (byToken(), your own key)`,
      );
    }
    return undefined;
  };
}

/** A value from the request, quoted (escapes included) and cut short, for a warning's text. */
function shown(value: string | undefined): string {
  if (value === undefined) return 'undefined';
  const quoted = JSON.stringify(value);
  return quoted.length <= 64 ? quoted : `${quoted.slice(0, 60)}…"`;
}

export interface ByTokenOptions {
  /**
   * The request header holding the secret, in any case.
   * @default 'authorization'
   */
  header?: string;
  /**
   * The authentication scheme before the secret (`Authorization: Bearer <token>`), matched without
   * regard to case. `false` takes the whole header value (an `X-API-Key` header).
   * @default 'Bearer' for the authorization header, `false` for any other header
   */
  scheme?: string | false;
}

/** HTTP whitespace (RFC 9110 OWS): space and horizontal tab. */
const OWS = /^[ \t]+|[ \t]+$/g;
const SEPARATOR = /[ \t]/;

const UTF8 = new TextEncoder();

/**
 * SHA-256, 128 bits kept, base64url: a store key that never shows the secret. Synchronous on
 * every runtime (Web Crypto's `digest` is asynchronous, `node:crypto` is Node's), and the same
 * text as `createHash('sha256')` gave, so the keys already stored still count.
 */
const digest = (text: string) => base64url(sha256(UTF8.encode(text))).slice(0, 22);

/**
 * The caller's bearer token or API key. The secret is hashed (SHA-256, 128 bits kept) before it
 * becomes a store key, so a store dump or a Redis `MONITOR` never shows credentials.
 *
 * The header is read as RFC 9110 §11.4 writes credentials, `auth-scheme 1*SP token68`: the scheme
 * in any case, then the token after one or more spaces, or tabs (which lenient servers take for
 * spaces: `Bearer<TAB>abc` must not escape the limit that `Bearer abc` counts against). A header
 * that cannot be read so (another scheme, no token, no separator) is limited by a hash of its
 * whole value, under `credential:` apart from tokens: an unreadable credential, which the app's own
 * parser may still accept, gets a limit rather than none. A request without the header, or with
 * an empty one, skips the limit: layer it with `byIp()` for anonymous traffic.
 * @example byToken({ header: 'x-api-key' })
 */
export function byToken(options: ByTokenOptions = {}): AnyKey {
  assertKnownOptions('byToken', options, ['header', 'scheme'] satisfies (keyof ByTokenOptions)[]);
  const header = options.header ?? 'authorization';
  if (typeof header !== 'string' || !/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(header)) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `header must be an HTTP header name such as 'authorization' or 'x-api-key'; got ${describeValue(header)}`,
      { option: 'header', value: header },
    );
  }
  const name = header.toLowerCase();
  const scheme = options.scheme ?? (name === 'authorization' ? 'Bearer' : false);
  if (scheme !== false && (typeof scheme !== 'string' || !/^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$/.test(scheme))) {
    throw new SluiceError(
      ErrorCode.INVALID_OPTION,
      `scheme must be an authentication scheme such as 'Bearer', or false; got ${describeValue(scheme)}`,
      { option: 'scheme', value: scheme },
    );
  }
  const wanted = scheme === false ? '' : scheme.toLowerCase();
  return function byTokenKey(req, access) {
    const raw = access.header(req, name);
    if (raw === undefined) return undefined;
    const value = raw.replace(OWS, '');
    if (value === '') return undefined;
    if (wanted === '') return `token:${digest(value)}`;
    const gap = value.search(SEPARATOR);
    if (gap > 0 && value.slice(0, gap).toLowerCase() === wanted) {
      return `token:${digest(value.slice(gap).replace(OWS, ''))}`;
    }
    return `credential:${digest(value)}`;
  };
}

/**
 * The method and the route *pattern* (`GET /users/:id`), never the raw URL, so that paths cannot
 * blow up the key space. HEAD is keyed as GET, whose handler answers it. Express knows the pattern only inside a route (per-route middleware);
 * where no route has matched yet, the limit is skipped and a warning given once.
 * @example compose(byToken(), byRoute()) // per token per route
 */
export function byRoute(): AnyKey {
  let warned = false;
  return function byRouteKey(req, access) {
    const route = access.route(req);
    if (route === undefined) {
      if (!warned) {
        warned = true;
        access.warn(
          'SLUICE_ROUTE_UNKNOWN',
          'byRoute() found no route pattern on the request (the limit was skipped); in Express, use the middleware on the route itself: app.get(path, rateLimit(...), handler)',
        );
      }
      return undefined;
    }
    // HEAD runs the GET handler (both frameworks answer it from the GET route): one quota for both.
    const method = access.method(req);
    return `route:${method === 'HEAD' ? 'GET' : method} ${route}`;
  };
}

/**
 * One key made of several (per token per route): the parts joined in order. If any part is
 * `undefined`, so is the whole, and the limit is skipped.
 * @example compose(byToken(), byRoute())
 */
export function compose<Req>(...parts: readonly KeyFunction<Req>[]): KeyFunction<Req> {
  if (parts.length === 0 || parts.some((part) => typeof part !== 'function')) {
    throw new SluiceError(ErrorCode.INVALID_OPTION, 'compose() needs one or more key functions', {
      option: 'compose',
      value: parts,
    });
  }
  return function composedKey(req, access) {
    let key = '';
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i]!(req, access);
      if (part === undefined) return undefined;
      key = i === 0 ? part : `${key}|${part}`;
    }
    return key;
  };
}

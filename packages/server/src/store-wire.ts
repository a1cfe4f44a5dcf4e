import type { Algorithm, Decision, LimitCall, RefusalReason } from '@sluice/core';
import { decide, fingerprint } from '@sluice/core/adapter';
import { specOf } from './algorithm-spec.js';

// Both sides of the wire: ServerStore (the client, which must not load the server's LMDB) and
// the server's commands (commands/sluice.ts) import these from here.

/**
 * A COMPACT reply's numbers per limit: reason (0 allowed, then {@link REASON_CODES}' order),
 * remaining, resetAfter, retryAfter, delay. The limit and the policy are left out: the caller sent
 * both (the algorithm's limit, the POLICY or the kind), as RedisStore's scripts leave them out.
 */
export const COMPACT_WIDTH = 5;

/** The refusal reasons of a COMPACT reply, coded 1, 2, 3 (0 is allowed). */
export const REASON_CODES: readonly RefusalReason[] = ['rate-limited', 'cost-exceeds-limit', 'concurrency'];

/** The key-id extra a client sends: empty when the fingerprint is the algorithm's own (no bound name). */
export function idOf(algorithm: Algorithm): string {
  return algorithm.fingerprint === fingerprint(algorithm.kind, algorithm.params) ? '' : algorithm.fingerprint;
}

/** A reply as ioredis gives it: integers as numbers, bulk strings as strings, arrays nested. */
/** A sluice-server reply as ioredis reads it (arrays of strings, numbers and nils). */
export type Reply = readonly (string | number | null | Reply)[];

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * A key as sent: the string itself, which ioredis writes as UTF-8 (what redis-cli users type, so
 * both reach the same bucket), or, for a string that is not valid UTF-16 text, 0xFF and its
 * UTF-16 code units (0xFF never occurs in UTF-8, so the two forms never collide). A string, not a
 * Buffer, in the common case: ioredis writes a command of strings as one string, without copying
 * Buffers together.
 */
export function keyArg(key: string): string | Buffer {
  if (!LONE_SURROGATE.test(key)) return key;
  return Buffer.concat([Buffer.from([0xff]), Buffer.from(key, 'utf16le')]);
}

/**
 * The arguments of SL.CHECK/PEEK/REFUND/RESET for `calls`: COST left out when 1 and POLICY when it
 * is the algorithm's kind (the server's defaults), so both sides handle fewer arguments.
 */
export function encodeCalls(
  calls: readonly Pick<LimitCall, 'algorithm' | 'key'>[] | readonly LimitCall[],
  now: number | undefined,
  prefix: string,
  compact: boolean,
): (string | Buffer)[] {
  const args: (string | Buffer)[] = now === undefined ? [] : ['AT', String(now)];
  if (compact) args.push('COMPACT');
  for (const call of calls) {
    args.push('LIMIT', specOf(call.algorithm), keyArg(prefix + call.key));
    if ('cost' in call) {
      if (call.cost !== 1) args.push('COST', String(call.cost));
      if (call.policy !== call.algorithm.kind) args.push('POLICY', call.policy);
    }
    const id = idOf(call.algorithm);
    if (id !== '') args.push('ID', id);
  }
  return args;
}

/** The per-limit decisions of a COMPACT reply (see `COMPACT_WIDTH`), in the order of `calls`. */
export function compactDecisions(reply: Reply, calls: readonly LimitCall[]): Decision[] {
  return calls.map((call, i) => {
    const at = i * COMPACT_WIDTH;
    const reason = Number(reply[at]);
    return decide(
      reason === 0,
      call.algorithm.limit,
      Number(reply[at + 1]),
      Number(reply[at + 2]),
      Number(reply[at + 3]),
      Number(reply[at + 4]),
      call.policy,
      reason === 0 ? undefined : REASON_CODES[reason - 1],
    );
  });
}

/** A Decision from its field/value pairs (the reply of SL.LEASE, and of CHECK without COMPACT). */
export function decisionOf(fields: Reply): Decision {
  const map = new Map<string, string | number | null | Reply>();
  for (let i = 0; i + 1 < fields.length; i += 2) map.set(fields[i] as string, fields[i + 1]!);
  const n = (name: string) => Number(map.get(name));
  const reason = map.get('reason');
  return decide(
    n('allowed') === 1,
    n('limit'),
    n('remaining'),
    n('resetAfter'),
    n('retryAfter'),
    n('delay'),
    String(map.get('policy')),
    reason === null || reason === undefined ? undefined : (reason as Decision['reason']),
  );
}

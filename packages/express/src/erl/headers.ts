import { createHash } from 'node:crypto';
import type { Response } from 'express';
import type { HeaderDraft } from './types.js';

/** What the headers say about one request. */
export interface HeaderFacts {
  readonly limit: number;
  readonly remaining: number;
  readonly resetTime: Date | undefined;
  readonly windowMs: number;
}

/** Seconds until the window ends; a store that does not say when counts a whole window. */
const resetSeconds = (facts: HeaderFacts): number =>
  facts.resetTime === undefined
    ? Math.ceil(facts.windowMs / 1000)
    : Math.max(0, Math.ceil((facts.resetTime.getTime() - Date.now()) / 1000));

/** `X-RateLimit-*` as express-rate-limit sends them: the reset as epoch seconds, with the `Date` it is relative to. */
export function setLegacyHeaders(res: Response, facts: HeaderFacts): void {
  if (res.headersSent) return;
  res.setHeader('X-RateLimit-Limit', String(facts.limit));
  res.setHeader('X-RateLimit-Remaining', String(facts.remaining));
  if (facts.resetTime !== undefined) {
    res.setHeader('Date', new Date().toUTCString());
    res.setHeader('X-RateLimit-Reset', String(Math.ceil(facts.resetTime.getTime() / 1000)));
  }
}

/**
 * The IETF `RateLimit` headers of one draft, as express-rate-limit words them. draft-8 appends
 * (several limiters list their quotas in one header), names the quota, and adds `pk`, the
 * client's partition key: a hash of its key, never the key itself.
 */
export function setStandardHeaders(
  res: Response,
  draft: HeaderDraft,
  facts: HeaderFacts,
  quota: string,
  key: string,
): void {
  if (res.headersSent) return;
  const window = Math.ceil(facts.windowMs / 1000);
  const reset = resetSeconds(facts);
  if (draft === 'draft-8') {
    res.append('RateLimit', `"${quota}"; r=${facts.remaining}; t=${reset}`);
    res.append('RateLimit-Policy', `"${quota}"; q=${facts.limit}; w=${window}; pk=:${partitionKey(key)}:`);
    return;
  }
  res.setHeader('RateLimit-Policy', `${facts.limit};w=${window}`);
  if (draft === 'draft-7') {
    res.setHeader('RateLimit', `limit=${facts.limit}, remaining=${facts.remaining}, reset=${reset}`);
    return;
  }
  res.setHeader('RateLimit-Limit', String(facts.limit));
  res.setHeader('RateLimit-Remaining', String(facts.remaining));
  res.setHeader('RateLimit-Reset', String(reset));
}

/** `Retry-After` on a refusal: the seconds until the window ends. */
export function setRetryAfter(res: Response, facts: HeaderFacts): void {
  if (!res.headersSent) res.setHeader('Retry-After', String(resetSeconds(facts)));
}

/** draft-8's `pk`: the first 12 hex digits of the key's SHA-256, as a byte sequence (base64 of their text). */
function partitionKey(key: string): string {
  const hex = createHash('sha256').update(key).digest('hex').slice(0, 12);
  return Buffer.from(hex).toString('base64');
}

/** draft-8's default quota name: "5-in-2hrs", "1-in-5sec", "8-in-2days". */
export function quotaName(limit: number, windowMs: number): string {
  const seconds = windowMs / 1000;
  const minutes = seconds / 60;
  const hours = minutes / 60;
  const days = hours / 24;
  let span: string;
  if (seconds < 60) span = `${seconds}sec`;
  else if (minutes < 60) span = `${minutes}min`;
  else if (hours < 24) span = `${hours}hr${hours > 1 ? 's' : ''}`;
  else span = `${days}day${days > 1 ? 's' : ''}`;
  return `${limit}-in-${span}`;
}

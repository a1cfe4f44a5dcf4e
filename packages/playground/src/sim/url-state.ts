import type { HeaderFormat } from '@sluice/core';
import {
  type FactoryName,
  headerFormatOf,
  type LimitSpec,
  type Mode,
  type PlaygroundConfig,
} from './config.js';
import type { PatternName, TrafficSpec } from './traffic.js';

/**
 * The page's state in its URL (in the fragment, after `#`: it never reaches the server, so a
 * pasted trace is not cut by a server's header limit), readable enough to edit by hand in a chat:
 *
 *   #mode=side-by-side&l=fixedWindow;limit=10;window=1s&l=slidingWindowLog;limit=10;window=1s
 *    &t=boundary;window=1s;count=10&headers=ietf
 *
 * `l=` is one limit (its factory, then its options), `t=` one traffic source (its pattern, then its
 * parameters; a CSV trace is `t=csv;text=0,alice,1%0A5,bob,2`). Inside an item `;`, `=` and `%`
 * are percent-encoded; numbers and `true`/`false` are read back as such, anything else as text
 * (durations such as `1s`).
 */
export function encodeState(config: PlaygroundConfig): string {
  const pairs: [string, string][] = [['mode', config.mode]];
  for (const limit of config.limits) {
    const { algorithm, ...options } = limit;
    pairs.push(['l', item(algorithm, options)]);
  }
  for (const source of config.traffic) {
    const { pattern, ...params } = source;
    pairs.push(['t', item(pattern, params)]);
  }
  pairs.push(['headers', config.headers]);
  return pairs.map(([k, v]) => `${k}=${readable(v)}`).join('&');
}

/** Reads a state (`location.hash` or `location.search`); what it leaves out comes from `defaults`. */
export function decodeState(text: string, defaults: PlaygroundConfig): PlaygroundConfig {
  const query = new URLSearchParams(text.replace(/^[#?]/, ''));
  const limits = query.getAll('l').map((text) => {
    const [algorithm, options] = parseItem(text);
    return { algorithm: algorithm as FactoryName, ...options } as LimitSpec;
  });
  const traffic = query.getAll('t').map((text) => {
    const [pattern, params] = parseItem(text);
    return { pattern: pattern as PatternName, ...params } as TrafficSpec;
  });
  return {
    mode: (query.get('mode') as Mode | null) ?? defaults.mode,
    limits: limits.length > 0 ? limits : defaults.limits,
    traffic: traffic.length > 0 ? traffic : defaults.traffic,
    headers: query.has('headers') ? headerFormatOf(query.get('headers')) : (defaults.headers as HeaderFormat),
  };
}

function item(head: string, values: Readonly<Record<string, string | number | boolean | undefined>>): string {
  const parts = [inner(head)];
  for (const [name, value] of Object.entries(values)) {
    if (value === undefined || value === '') continue;
    parts.push(`${inner(name)}=${inner(String(value))}`);
  }
  return parts.join(';');
}

function parseItem(text: string): [string, Record<string, string | number | boolean>] {
  const [head = '', ...parts] = text.split(';');
  const values: Record<string, string | number | boolean> = {};
  for (const part of parts) {
    if (part === '') continue;
    const at = part.indexOf('=');
    const name = decodeURIComponent(at < 0 ? part : part.slice(0, at));
    values[name] = typed(decodeURIComponent(at < 0 ? 'true' : part.slice(at + 1)));
  }
  return [decodeURIComponent(head), values];
}

/** `10` → 10, `true` → true; `1s`, `stepped`, names stay text. */
function typed(text: string): string | number | boolean {
  if (text === 'true') return true;
  if (text === 'false') return false;
  if (/^-?\d+(\.\d+)?(e[+-]?\d+)?$/i.test(text)) return Number(text);
  return text;
}

function inner(text: string): string {
  return text.replace(/[%;=&#]/g, (c) => encodeURIComponent(c));
}

/** encodeURIComponent, leaving the separators that are legal in a query readable. */
function readable(text: string): string {
  return encodeURIComponent(text).replace(/%(3B|3D|2C|3A|2F|40)/g, (kept) => decodeURIComponent(kept));
}

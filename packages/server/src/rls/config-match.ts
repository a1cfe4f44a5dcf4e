import type { ConfigNode, DomainConfig, Rule } from './config.js';

/** A descriptor entry as Envoy sends it. */
export interface Entry {
  readonly key: string;
  readonly value: string;
}

/** The rule a descriptor matched, the key its counter lives under, and the key its stats go to. */
export interface Match {
  readonly rule: Rule;
  /**
   * The counter's key: the descriptor's entries, each value replaced by its wildcard pattern where
   * the matched level shares its threshold (`share_threshold`), so those values count together.
   */
  readonly counterKey: string;
  readonly statsKey: string;
}

/** Whether `value` matches a pattern split on `*` (each `*` any run of characters, in order). */
export function wildcardMatch(parts: readonly string[], value: string): boolean {
  if (parts.length === 1) return parts[0] === value;
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (!value.startsWith(first) || !value.endsWith(last)) return false;
  if (value.length < parts.reduce((n, p) => n + p.length, 0)) return false;
  let at = first.length;
  const end = value.length - last.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const found = value.indexOf(parts[i]!, at);
    if (found < 0 || found + parts[i]!.length > end) return false;
    at = found + parts[i]!.length;
  }
  return true;
}

/** The counter's key, one NUL between each part: no entry can be confused with two. */
function counterKey(
  domain: string,
  entries: readonly Entry[],
  shared: readonly (string | undefined)[],
): string {
  let key = domain;
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    key += `\0${entry.key}\0${shared[i] ?? entry.value}`;
  }
  return key;
}

/**
 * The most specific rule for a descriptor, as envoyproxy/ratelimit finds it: at each level the
 * entry's `key_value`, else the first wildcard of that level matching it, else its `key` alone;
 * a rule applies only when it sits at the descriptor's last entry (a descriptor longer or shorter
 * than the config's nesting matches nothing). Its stats key follows the same walk
 * (`detailed_metric`, `value_to_metric`, `share_threshold`).
 */
export function matchDescriptor(domain: DomainConfig, entries: readonly Entry[]): Match | undefined {
  let level: ConfigNode = domain;
  let rule: Rule | undefined;
  const shared: (string | undefined)[] = [];
  let detailed = domain.domain;
  let valueKey = domain.domain;
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    const keyValue = `${entry.key}_${entry.value}`;
    detailed += `.${keyValue}`;
    let next = level.children.get(keyValue);
    let wildcard: string | undefined;
    if (next === undefined) {
      for (const w of level.wildcards) {
        if (wildcardMatch(w.parts, keyValue)) {
          next = level.children.get(w.key);
          wildcard = w.key;
          break;
        }
      }
    }
    const byValue = next !== undefined;
    if (next === undefined) next = level.children.get(entry.key);
    const pattern = wildcard?.slice(entry.key.length + 1);
    if (wildcard !== undefined && next?.shareThreshold === true) shared[i] = pattern;
    valueKey += `.${entry.key}`;
    if (next !== undefined) {
      let value = '';
      if (wildcard !== undefined) value = shared[i] ?? (next.valueToMetric ? entry.value : (pattern ?? ''));
      else if (byValue || next.valueToMetric) value = entry.value;
      if (value !== '') valueKey += `_${value}`;
    }
    if (next?.rule !== undefined && i === entries.length - 1) rule = next.rule;
    if (next === undefined || next.children.size === 0) break;
    level = next;
  }
  if (rule === undefined) return undefined;
  let statsKey = rule.fullKey;
  if (rule.detailedMetric) {
    statsKey = domain.domain;
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!;
      const value = shared[i] ?? e.value;
      statsKey += value === '' ? `.${e.key}` : `.${e.key}_${value}`;
    }
    if (!shared.some((s) => s !== undefined)) statsKey = detailed;
  } else if (valueKey !== rule.fullKey) {
    statsKey = valueKey;
  }
  return { rule, counterKey: counterKey(domain.domain, entries, shared), statsKey };
}

/** The counter key of a descriptor that brought its own limit (no config walk). */
export function overrideKeys(
  domain: string,
  entries: readonly Entry[],
): { counterKey: string; statsKey: string } {
  let stats = '';
  for (const e of entries) {
    if (stats !== '') stats += '.';
    stats += e.value === '' ? e.key : `${e.key}_${e.value}`;
  }
  return { counterKey: counterKey(domain, entries, []), statsKey: `${domain}.${stats}` };
}

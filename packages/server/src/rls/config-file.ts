import { ErrorCode, SluiceError } from '@sluice/core';
import { isMap, isScalar, isSeq, LineCounter, type Node, parseDocument, type YAMLMap } from 'yaml';

/**
 * One file of envoyproxy/ratelimit's YAML, read as that service reads it (yaml.v2 into its
 * structs, after checking every key against its list), plus sluice's own keys. Every value keeps
 * the line it was written on, so an error names the file and the line.
 */

/** A `rate_limit` block as written. */
export interface RawRateLimit {
  readonly line: number;
  readonly unit: string | undefined;
  readonly requestsPerUnit: number;
  readonly unlimited: boolean;
  readonly name: string;
  readonly replaces: readonly string[];
  /** sluice: the algorithm (`sliding_window_counter`, `gcra`…); absent: envoyproxy/ratelimit's fixed window. */
  readonly algorithm: string | undefined;
  /** sluice: the window or period as a duration (`5m`) instead of `unit`. */
  readonly duration: string | undefined;
  /** sluice: a token bucket's capacity, a GCRA's burst. */
  readonly burst: number | undefined;
}

export interface RawDescriptor {
  readonly line: number;
  readonly key: string;
  readonly value: string;
  readonly rateLimit: RawRateLimit | undefined;
  readonly descriptors: readonly RawDescriptor[];
  readonly shadowMode: boolean;
  readonly detailedMetric: boolean;
  readonly valueToMetric: boolean;
  readonly shareThreshold: boolean;
}

export interface RawRoot {
  readonly file: string;
  readonly domain: string;
  readonly descriptors: readonly RawDescriptor[];
  /** sluice: decide a request's descriptors all-or-nothing. @default false (each on its own, as envoyproxy/ratelimit) */
  readonly allOrNothing: boolean;
}

/** envoyproxy/ratelimit's accepted keys (its `validKeys`), and sluice's, where each may appear. */
const ROOT_KEYS = ['domain', 'descriptors', 'all_or_nothing'] as const;
const DESCRIPTOR_KEYS = [
  'key',
  'value',
  'rate_limit',
  'descriptors',
  'shadow_mode',
  'quota_mode',
  'detailed_metric',
  'value_to_metric',
  'share_threshold',
  'metadata',
] as const;
const RATE_LIMIT_KEYS = [
  'unit',
  'requests_per_unit',
  'unlimited',
  'name',
  'replaces',
  'algorithm',
  'duration',
  'burst',
] as const;

/** A config error: the file, the line, what is wrong. */
export function configError(file: string, line: number | undefined, message: string): SluiceError {
  const where = line === undefined ? file : `${file}:${line}`;
  return new SluiceError(ErrorCode.INVALID_OPTION, `${where}: ${message}`, {
    option: 'rls config',
    value: where,
  });
}

class Reader {
  constructor(
    readonly file: string,
    private readonly lines: LineCounter,
  ) {}

  line(node: Node | null | undefined): number | undefined {
    const offset = node?.range?.[0];
    return offset === undefined ? undefined : this.lines.linePos(offset).line;
  }

  fail(node: Node | null | undefined, message: string): never {
    throw configError(this.file, this.line(node), message);
  }

  map(node: unknown, what: string): YAMLMap {
    if (!isMap(node)) this.fail(node as Node, `${what} must be a map`);
    return node;
  }

  /** The map's entries by key, every key checked against `known`. */
  fields(map: YAMLMap, known: readonly string[]): Map<string, Node | null> {
    const fields = new Map<string, Node | null>();
    for (const pair of map.items) {
      const keyNode = pair.key as Node;
      if (!isScalar(keyNode) || typeof keyNode.value !== 'string') {
        this.fail(
          keyNode,
          `key is not of type string: ${JSON.stringify(isScalar(keyNode) ? keyNode.value : null)}`,
        );
      }
      const key = keyNode.value;
      if (!known.includes(key)) {
        this.fail(keyNode, `unknown key '${key}'; accepted here: ${known.join(', ')}`);
      }
      fields.set(key, pair.value as Node | null);
    }
    return fields;
  }

  /** A string field: any scalar's text as written (yaml.v2 reads `value: 200` as "200"). */
  string(node: Node | null | undefined, what: string): string {
    if (node === undefined || node === null) return '';
    if (!isScalar(node)) this.fail(node, `${what} must be a string`);
    if (node.value === null) return '';
    return typeof node.value === 'string' ? node.value : String(node.source ?? node.value);
  }

  bool(node: Node | null | undefined, what: string): boolean {
    if (node === undefined || node === null) return false;
    if (!isScalar(node) || typeof node.value !== 'boolean') this.fail(node, `${what} must be true or false`);
    return node.value;
  }

  /** An unsigned 32-bit integer (requests_per_unit is a uint32 there). */
  uint32(node: Node | null | undefined, what: string): number {
    if (node === undefined || node === null) return 0;
    const value = isScalar(node) ? node.value : undefined;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 0xffff_ffff) {
      this.fail(
        node,
        `${what} must be a whole number from 0 to 4294967295; got ${JSON.stringify(value ?? null)}`,
      );
    }
    return value;
  }

  list(node: Node | null | undefined, what: string): Node[] {
    if (node === undefined || node === null) return [];
    if (!isSeq(node)) this.fail(node, `${what} must be a list`);
    return node.items as Node[];
  }
}

function readRateLimit(r: Reader, node: Node | null): RawRateLimit {
  const map = r.map(node, 'rate_limit');
  const f = r.fields(map, RATE_LIMIT_KEYS);
  const replaces = r.list(f.get('replaces'), 'replaces').map((item) => {
    const entry = r.fields(r.map(item, 'a replaces entry'), ['name']);
    return r.string(entry.get('name'), 'replaces name');
  });
  const burst = f.get('burst');
  const algorithm = r.string(f.get('algorithm'), 'algorithm');
  const duration = r.string(f.get('duration'), 'duration');
  return {
    line: r.line(map) ?? 0,
    unit: f.has('unit') ? r.string(f.get('unit'), 'unit') : undefined,
    requestsPerUnit: r.uint32(f.get('requests_per_unit'), 'requests_per_unit'),
    unlimited: r.bool(f.get('unlimited'), 'unlimited'),
    name: r.string(f.get('name'), 'name'),
    replaces,
    algorithm: algorithm === '' ? undefined : algorithm,
    duration: duration === '' ? undefined : duration,
    burst: burst === undefined || burst === null ? undefined : r.uint32(burst, 'burst'),
  };
}

function readDescriptor(r: Reader, node: Node): RawDescriptor {
  const map = r.map(node, 'a descriptor');
  const f = r.fields(map, DESCRIPTOR_KEYS);
  if (r.bool(f.get('quota_mode'), 'quota_mode')) {
    r.fail(
      f.get('quota_mode'),
      'quota_mode is not supported by sluice-server (it answers every descriptor by its own limit)',
    );
  }
  const rateLimit = f.get('rate_limit');
  return {
    line: r.line(map) ?? 0,
    key: r.string(f.get('key'), 'key'),
    value: r.string(f.get('value'), 'value'),
    rateLimit: rateLimit === undefined || rateLimit === null ? undefined : readRateLimit(r, rateLimit),
    descriptors: r.list(f.get('descriptors'), 'descriptors').map((d) => readDescriptor(r, d)),
    shadowMode: r.bool(f.get('shadow_mode'), 'shadow_mode'),
    detailedMetric: r.bool(f.get('detailed_metric'), 'detailed_metric'),
    valueToMetric: r.bool(f.get('value_to_metric'), 'value_to_metric'),
    shareThreshold: r.bool(f.get('share_threshold'), 'share_threshold'),
  };
}

/** Reads one YAML file's text; throws a SluiceError naming `file` and the line. */
export function readConfigFile(file: string, text: string): RawRoot {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  const first = doc.errors[0];
  if (first !== undefined) {
    throw configError(
      file,
      first.linePos?.[0].line ?? lines.linePos(first.pos[0]).line,
      `error loading config file: ${first.message.split('\n')[0]}`,
    );
  }
  const r = new Reader(file, lines);
  if (doc.contents === null) throw configError(file, undefined, 'config file cannot have empty domain');
  const f = r.fields(r.map(doc.contents, 'the file'), ROOT_KEYS);
  return {
    file,
    domain: r.string(f.get('domain'), 'domain'),
    descriptors: r.list(f.get('descriptors'), 'descriptors').map((d) => readDescriptor(r, d)),
    allOrNothing: r.bool(f.get('all_or_nothing'), 'all_or_nothing'),
  };
}

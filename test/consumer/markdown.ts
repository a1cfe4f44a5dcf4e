import { readFileSync } from 'node:fs';

/** One TypeScript code block of a markdown file, as users read it, and what it assumes. */
export interface CodeBlock {
  /** Where it is: `packages/redis/README.md:34` (the fence's line). */
  readonly where: string;
  /** The block as written. */
  readonly code: string;
  /**
   * What the block assumes is in scope (a client, an app, the handlers it names), from an HTML
   * comment `<!-- prelude: … -->` right before the fence: invisible on the rendered page, so the
   * code users see is exactly what gets compiled after it.
   */
  readonly prelude: string;
}

const FENCE = /^```(\w*)\s*$/;
const PRELUDE = /^<!--\s*prelude:([\s\S]*)-->$/;

/** The prelude in the HTML comment that ends right before a fence, or ''. */
function preludeBefore(text: string): string {
  const end = text.trimEnd();
  if (!end.endsWith('-->')) return '';
  return PRELUDE.exec(end.slice(end.lastIndexOf('<!--')))?.[1]?.trim() ?? '';
}

/** Every ```ts block of a markdown file, in order, with its prelude. */
export function typescriptBlocks(path: string, shownAs: string): CodeBlock[] {
  const lines = readFileSync(path, 'utf8').split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (open === null) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    if (open[1] !== 'ts' && open[1] !== 'typescript') continue;
    const prelude = preludeBefore(lines.slice(0, start).join('\n'));
    blocks.push({ where: `${shownAs}:${start + 1}`, code: body.join('\n'), prelude });
  }
  return blocks;
}

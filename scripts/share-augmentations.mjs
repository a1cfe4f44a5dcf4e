// Run in a package directory after tsup. tsup writes the same declarations twice, dist/index.d.ts
// (import) and dist/index.d.cts (require), each with its own copy of every module augmentation
// (`declare module 'fastify' { … }`, `declare global { … }`). A program that loads both (ES modules
// beside .cts files) then declares each augmented property twice with types from two different
// files, and TypeScript stops with TS2717. This keeps the augmentations in index.d.ts only and
// makes index.d.cts reference it, so every program sees them declared once.
import { readFileSync, writeFileSync } from 'node:fs';

const file = 'dist/index.d.cts';
const source = readFileSync(file, 'utf8');
const AUGMENTATION = /^declare (?:module '[^']+'|global) \{\n[\s\S]*?\n\}\n/gm;
const reference = '/// <reference path="./index.d.ts" />\n';
if (AUGMENTATION.test(source) && !source.startsWith(reference)) {
  writeFileSync(file, reference + source.replace(AUGMENTATION, ''));
}

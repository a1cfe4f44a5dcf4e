import { defineConfig } from 'tsup';
import base from '../../tsup.base.js';

// The library (ESM + CJS) as every package builds it, plus the `sluice-server` command (ESM only).
export default defineConfig([
  base,
  { ...base, entry: ['src/cli.ts'], format: ['esm'], dts: false, clean: false },
]);

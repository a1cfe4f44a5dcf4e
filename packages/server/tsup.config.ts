import { defineConfig } from 'tsup';
import base from '../../tsup.base.js';

// The library (ESM + CJS) as every package builds it, with a second entry, `@sluice/server/client`
// (ServerStore without the server and its LMDB), plus the `sluice-server` command (ESM only).
// Splitting in both formats puts the modules both entries share in one chunk: one ServerStore
// class (and one declaration of it) whichever entry loaded it. `shims`: the rate limit service finds
// its .proto files from `import.meta.url`, which the CommonJS build takes from `__filename`.
export default defineConfig([
  { ...base, entry: ['src/index.ts', 'src/client.ts'], splitting: true, shims: true },
  { ...base, entry: ['src/cli.ts'], format: ['esm'], dts: false, clean: false },
]);

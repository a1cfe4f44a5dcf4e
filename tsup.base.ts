import { defineConfig } from 'tsup';

/** Every package builds the same way: ESM + CJS with declarations from src/index.ts, for Node 20. */
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  tsconfig: 'tsconfig.build.json',
});

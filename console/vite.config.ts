// The web console's build (issue 15). scripts/build.mjs runs it through Vite's API with this file; `npx vite
// --config console/vite.config.ts` serves it for development, with the API proxied to a gpuplane on :8080.
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: here,
  base: '/',
  plugins: [react()],
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    // Hashed names under assets/: the server gives them a year of immutable caching (src/webconsole/).
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
    // .vite/manifest.json: the chunk graph, which test/console-budget.test.ts measures (first page ≤ 250 KB gzipped).
    manifest: true,
  },
  server: {
    proxy: { '/api': 'http://127.0.0.1:8080', '/_emu': 'http://127.0.0.1:8080' },
  },
});

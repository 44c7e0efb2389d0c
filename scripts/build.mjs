#!/usr/bin/env node
// `npm run build` (run by `npm ci` and `npm install` through `prepare`): compiles src/ into dist/gpuplane.mjs, the
// file bin/gpuplane.mjs and `npm start` run. Type checking is `tsc --noEmit` (in `npm test`); this only emits.
//
// One file, with the dependencies inside, as tsup would make it: Node loads it in far less time than the hundreds of
// files tsc's output and node_modules would be (start-up is measured by `npm run bench -- startup`). Packages that
// read their own files at run time (native code, static files) stay outside and load from node_modules.
// Consequence for code in src/: `import.meta.url` is the bundle's URL; find files from the project root instead.
import { build } from 'esbuild';
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outDir = join(root, 'dist');
const EXTERNAL = ['better-sqlite3', 'pg-native', '@fastify/swagger', '@fastify/swagger-ui', '@fastify/static'];

// Written beside and renamed into place, so that a process starting meanwhile never loads half a file.
const tmpDir = join(outDir, `.tmp-${process.pid}`);
mkdirSync(tmpDir, { recursive: true });
try {
  await build({
    entryPoints: [join(root, 'src', 'cli', 'main.ts')],
    outfile: join(tmpDir, 'gpuplane.mjs'),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: EXTERNAL,
    // Bundled CommonJS packages call require() for Node's built-ins and the external packages.
    banner: { js: "import { createRequire as __gpuplaneRequire } from 'node:module'; const require = __gpuplaneRequire(import.meta.url);" },
    // `GPUPLANE_SOURCE_MAPS=1` (or `node --enable-source-maps`) maps stack traces back to src/.
    sourcemap: 'linked',
    sourcesContent: false,
    logLevel: 'warning',
  });
  renameSync(join(tmpDir, 'gpuplane.mjs.map'), join(outDir, 'gpuplane.mjs.map'));
  renameSync(join(tmpDir, 'gpuplane.mjs'), join(outDir, 'gpuplane.mjs'));
} finally {
  rmSync(tmpDir, { recursive: true, force: true });
}

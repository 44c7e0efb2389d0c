#!/usr/bin/env node
// `npm run build` (run by `npm ci` and `npm install` through `prepare`): compiles src/ into dist/, whose
// dist/gpuplane.mjs bin/gpuplane.mjs and `npm start` run. Type checking is `tsc --noEmit` (in `npm test`); this only
// emits.
//
// Bundled, with the dependencies inside, as tsup would make it: Node loads a few files in far less time than the
// hundreds that tsc's output and node_modules would be (start-up is measured by `npm run bench -- startup`). Split at
// the dynamic imports of src/cli/main.ts, so that client commands do not load the server. Packages that read their
// own files at run time (native code, static files) stay outside and load from node_modules.
// Consequence for code in src/: `import.meta.url` is the bundle's URL; find files from the project root instead.
import { build } from 'esbuild';
import { mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outDir = join(root, 'dist');
// pino-pretty too: a CommonJS package loaded with import() (only for pretty logs) keeps its named exports this way,
// where a split bundle's chunk would offer only `default`.
// ws (the console's terminal, issue 32) requires its optional native helpers (bufferutil, utf-8-validate) in a try:
// left external, Node resolves it from node_modules as ws expects.
// ssh2 (the SSH gateway's refusals, the agent's own SSH server) loads optional native code (cpu-features, its own
// crypto binding) by require() at run time.
const EXTERNAL = ['better-sqlite3', 'pg-native', '@fastify/swagger', '@fastify/swagger-ui', '@fastify/static', 'pino-pretty', 'ssh2', 'ws'];

// Built beside, then moved in: the chunks first (their names carry a hash of their content), the entry last, in one
// rename, so that a process starting meanwhile loads either build whole. Chunks of older builds are then removed.
const tmpDir = join(root, `.dist-tmp-${process.pid}`);
rmSync(tmpDir, { recursive: true, force: true });
try {
  const result = await build({
    entryPoints: { gpuplane: join(root, 'src', 'cli', 'main.ts') },
    outdir: tmpDir,
    outExtension: { '.js': '.mjs' },
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    metafile: true,
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
  const built = Object.keys(result.metafile.outputs).map((p) => relative(tmpDir, join(root, p)));
  mkdirSync(join(outDir, 'chunks'), { recursive: true });
  const entry = ['gpuplane.mjs', 'gpuplane.mjs.map'];
  for (const file of built.filter((f) => !entry.includes(f))) renameSync(join(tmpDir, file), join(outDir, file));
  for (const file of entry) renameSync(join(tmpDir, file), join(outDir, file));
  for (const old of readdirSync(join(outDir, 'chunks'))) {
    if (!built.includes(join('chunks', old))) rmSync(join(outDir, 'chunks', old), { force: true });
  }
} finally {
  rmSync(tmpDir, { recursive: true, force: true });
}

// The web console (console/, issue 15): a Vite build into dist/console, which the server serves at `/`
// (src/webconsole/). Its own tsconfig is checked by `npm test` (scripts/test.mjs); this only bundles.
const { build: viteBuild } = await import('vite');
await viteBuild({ configFile: join(root, 'console', 'vite.config.ts'), logLevel: 'warn' });

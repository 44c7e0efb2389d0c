#!/usr/bin/env node
// Compiles each test file (test/**/*.test.ts) with the sources it imports into .test-build/, for
// scripts/run-tests.mjs: bundled with esbuild, split into shared chunks (so a test process has one copy of each
// module, as before), npm packages left to node_modules. Node then loads a few plain JavaScript files: through tsx's
// loader hooks (which Node 20 runs on a second thread and crosses for every module) each test file spent 1.6 s of
// CPU importing the app; file by file compiled, 0.65 s; bundled, about 0.55 s.
// The tree keeps its shape (.test-build/test, with package.json beside it). `import.meta.dirname`, `.filename` and
// `.url` are replaced with the source file's own, so tests find fixtures, README.md and bin/ where they are. Type
// checking is `tsc --noEmit`.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

export const root = join(import.meta.dirname, '..');
// GPUPLANE_TEST_BUILD_DIR gives a run its own folder, so two runs at once (two developers' filters in one tree) do not
// remove each other's build.
export const outDir = process.env.GPUPLANE_TEST_BUILD_DIR ? join(root, process.env.GPUPLANE_TEST_BUILD_DIR) : join(root, '.test-build');

function tsFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return tsFiles(p);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [p] : [];
  });
}

/** The source file's own location, where code asks for the module's. */
const sourceLocation = {
  name: 'source-location',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8')
        .replaceAll('import.meta.dirname', JSON.stringify(dirname(args.path)))
        .replaceAll('import.meta.filename', JSON.stringify(args.path))
        .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href));
      return { contents: text, loader: 'ts', resolveDir: dirname(args.path) };
    });
  },
};

/** Builds the given test files (paths from the root), or every test file. */
export async function buildTests(only) {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const all = tsFiles(join(root, 'test')).filter((f) => f.endsWith('.test.ts'));
  await build({
    entryPoints: only ? all.filter((f) => only.includes(f.slice(root.length + 1))) : all,
    outdir: outDir,
    outbase: root,
    bundle: true,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Node 20.10+ takes `with { type: 'json' }` (engines: >=20.19); esbuild's node20 target would drop it.
    supported: { 'import-attributes': true },
    sourcemap: 'inline',
    plugins: [sourceLocation],
    logLevel: 'error',
  });
  copyFileSync(join(root, 'package.json'), join(outDir, 'package.json'));
}

if (process.argv[1] === import.meta.filename) await buildTests();

#!/usr/bin/env node
// Runs the TypeScript sources: they are the one source of truth, with no build step to remember.
//
// Loading them through tsx's loader hooks, and loading hundreds of node_modules files one by one, takes seconds at
// start on a busy machine. So the launcher bundles src/ and its dependencies with esbuild (installed with tsx) into
// one file, cached under node_modules/.cache keyed by the sources' and the lockfile's content, and runs that. Packages
// that read their own files at run time (native code, static files) stay outside the bundle. GPUPLANE_SOURCE_MAPS=1
// maps stack traces back to src/ (it costs start-up time). When bundling is not possible (or GPUPLANE_NO_BUNDLE=1), it
// runs the sources through tsx.
// Consequence for code in src/: `import.meta.url` is the bundle's URL; find files from the project root instead.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const entry = join(root, 'src', 'cli', 'main.ts');
const cacheDir = join(root, 'node_modules', '.cache', 'gpuplane');
/** Loaded from node_modules at run time: native code, or packages that serve or read files beside their code. */
const EXTERNAL = ['better-sqlite3', 'pg-native', '@fastify/swagger', '@fastify/swagger-ui', '@fastify/static'];
/** Older bundles are removed once they are this old (a process started just before may still be loading one). */
const STALE_BUNDLE_MS = 10 * 60 * 1000;

function sourceFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = join(dir, d.name);
    if (d.isDirectory()) return sourceFiles(p);
    return /\.(ts|mts|js|mjs|json)$/.test(d.name) ? [p] : [];
  });
}

async function bundle() {
  const { build, version } = await import('esbuild');
  const hash = createHash('sha256').update(`${version}\0${process.version}\0`);
  for (const file of sourceFiles(join(root, 'src')).sort()) hash.update(`${file}\0`).update(readFileSync(file));
  for (const file of ['tsconfig.json', 'package.json', 'package-lock.json']) {
    if (existsSync(join(root, file))) hash.update(readFileSync(join(root, file)));
  }
  const name = `gpuplane-${hash.digest('hex').slice(0, 16)}.mjs`;
  const out = join(cacheDir, name);
  if (existsSync(out)) return out;

  // Written in a folder of its own and renamed into place: several processes may start at once.
  const tmpDir = join(cacheDir, `.tmp-${process.pid}`);
  mkdirSync(tmpDir, { recursive: true });
  const tmp = join(tmpDir, name);
  await build({
    entryPoints: [entry],
    outfile: tmp,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: EXTERNAL,
    // Bundled CommonJS packages call require() for Node's built-ins and the external packages.
    banner: { js: "import { createRequire as __gpuplaneRequire } from 'node:module'; const require = __gpuplaneRequire(import.meta.url);" },
    sourcemap: 'external',
    sourcesContent: false,
    logLevel: 'silent',
  });
  renameSync(`${tmp}.map`, `${out}.map`);
  renameSync(tmp, out);
  rmSync(tmpDir, { recursive: true, force: true });
  for (const old of readdirSync(cacheDir)) {
    const p = join(cacheDir, old);
    try {
      if (!old.startsWith(name) && Date.now() - statSync(p).mtimeMs > STALE_BUNDLE_MS) rmSync(p, { recursive: true, force: true });
    } catch {
      // Another process removed it first.
    }
  }
  return out;
}

let bundled = null;
if (process.env.GPUPLANE_NO_BUNDLE !== '1') {
  try {
    bundled = await bundle();
  } catch {
    bundled = null;
  }
}
if (bundled) {
  if (process.env.GPUPLANE_SOURCE_MAPS === '1') process.setSourceMapsEnabled(true);
  await import(pathToFileURL(bundled).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(entry).href);
}

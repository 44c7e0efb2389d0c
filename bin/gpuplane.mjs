#!/usr/bin/env node
// The `gpuplane` command: runs the build, dist/gpuplane.mjs (made by `npm run build`, which `npm ci` and `npm install`
// run through `prepare`). `npm run dev` runs the TypeScript sources instead, restarting on changes.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const built = new URL('../dist/gpuplane.mjs', import.meta.url);
if (!existsSync(fileURLToPath(built))) {
  process.stderr.write('gpuplane: dist/gpuplane.mjs is missing: run `npm run build` (or `npm ci`) first\n');
  process.exit(1);
}
// The web console the build wrote beside the server (dist/console), unless the operator points elsewhere.
process.env.GPUPLANE_CONSOLE_DIR ||= fileURLToPath(new URL('../dist/console', import.meta.url));
if (process.env.GPUPLANE_SOURCE_MAPS === '1') process.setSourceMapsEnabled(true);
await import(built.href);

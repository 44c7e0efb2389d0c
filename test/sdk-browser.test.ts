// The SDK runs in a browser (docs/DEVELOPING.md, "Layers and their rules"): bundled for the browser platform, it
// resolves no Node built-in, and what it carries is the SDK itself, the server's schema and type modules and the
// browser packages they use only, never platform or feature code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { build } from 'esbuild';

const ROOT = join(import.meta.dirname, '..');
const SCHEMA_MODULE = /^src\/(?!platform\/lazy-schemas)[^/]+\/[^/]*(schemas|types|constants)\.ts$/;

test('the SDK bundles for the browser, carrying only itself and schema modules', async () => {
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: ['src/sdk/index.ts'],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  assert.deepEqual(result.errors, []);
  const inputs = Object.keys(result.metafile.inputs);
  assert.ok(inputs.includes('src/sdk/client.ts'), 'the client is in the bundle');
  // Packages: TypeBox (the schemas) and eventsource-parser (the SSE reader), both made for browsers.
  const foreign = inputs.filter((p) => !p.startsWith('src/sdk/') && !SCHEMA_MODULE.test(p) && !/^node_modules\/(typebox|eventsource-parser)\//.test(p));
  assert.deepEqual(foreign, []);
  const text = result.outputFiles[0].text;
  assert.doesNotMatch(text, /from ["']node:/);
});

test('a module that needs Node does not bundle for the browser (the check above can fail)', async () => {
  await assert.rejects(
    build({ absWorkingDir: ROOT, entryPoints: ['src/platform/crypto.ts'], bundle: true, platform: 'browser', format: 'esm', write: false, logLevel: 'silent' }),
    /node:crypto|crypto/,
  );
});

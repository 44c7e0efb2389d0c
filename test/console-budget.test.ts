// The web console's budget (issue 15): the JavaScript the browser needs for a first page (the entry, what it imports,
// and the page's own chunk with its imports) is at most 250 KB gzipped, for every page. Measured on the build that
// `npm run build` (run first by the test runner) wrote to dist/console, through Vite's manifest of the chunk graph.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

const BUDGET_BYTES = 250 * 1024;
const dir = join(import.meta.dirname, '..', 'dist', 'console');

interface Chunk { file: string; src?: string; isEntry?: boolean; imports?: string[]; dynamicImports?: string[] }

test('every page\'s first load is at most 250 KB of gzipped JavaScript', (t) => {
  const manifest = JSON.parse(readFileSync(join(dir, '.vite', 'manifest.json'), 'utf8')) as Record<string, Chunk>;
  const gz = new Map<string, number>();
  const size = (file: string) => {
    if (!gz.has(file)) gz.set(file, gzipSync(readFileSync(join(dir, file)), { level: 9 }).length);
    return gz.get(file)!;
  };
  /** A chunk and everything it imports statically (loaded with it). */
  const closure = (key: string, seen = new Set<string>()): Set<string> => {
    if (seen.has(key)) return seen;
    seen.add(key);
    for (const k of manifest[key].imports ?? []) closure(k, seen);
    return seen;
  };
  const entries = Object.entries(manifest).filter(([, c]) => c.isEntry);
  assert.equal(entries.length, 1, 'one entry: index.html');
  const [entryKey, entry] = entries[0];
  const base = closure(entryKey);
  const pages = entry.dynamicImports ?? [];
  assert.ok(pages.length >= 2, 'the pages load as their own chunks');
  const js = (keys: Set<string>) => [...keys].map((k) => manifest[k].file).filter((f) => f.endsWith('.js'));
  const sum = (keys: Set<string>) => js(keys).reduce((a, f) => a + size(f), 0);
  const sizes: [string, number][] = [['(sign-in page)', sum(base)]];
  for (const page of pages) sizes.push([manifest[page].src ?? page, sum(closure(page, new Set(base)))]);
  for (const [name, bytes] of sizes) {
    t.diagnostic(`${name}: ${(bytes / 1024).toFixed(1)} KB gzipped`);
    assert.ok(bytes <= BUDGET_BYTES, `${name}: ${bytes} bytes gzipped, over the ${BUDGET_BYTES}-byte budget`);
  }
});

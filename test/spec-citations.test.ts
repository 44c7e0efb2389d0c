// Comments cite the specification inside the repository (docs/spec/README.md): every `contract §N` and
// `client-compat-more §x` a comment in src/ or test/ names is a section that exists, and no comment cites a file
// outside the repository.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sources(p);
    return /\.(ts|mjs|cjs)$/.test(name) ? [p] : [];
  });
}

/** Section labels of a spec document: `## 3. Routes …` gives `3`, `## (b) Account` gives `b`. */
function sections(file: string): Set<string> {
  const labels = new Set<string>();
  for (const line of readFileSync(join(root, 'docs/spec', file), 'utf8').split('\n')) {
    const m = /^## (?:(\d+)\.|\(([a-z])\))/.exec(line);
    if (m) labels.add(m[1] ?? m[2]!);
  }
  return labels;
}

const files = [...sources(join(root, 'src')), ...sources(join(root, 'test')), ...sources(join(root, 'scripts'))];
const texts = files.map((f) => ({ file: f.slice(root.length + 1), text: readFileSync(f, 'utf8') }));

test('every cited section of contract.md and client-compat-more.md exists in docs/spec', () => {
  const known = { contract: sections('contract.md'), 'client-compat-more': sections('client-compat-more.md') };
  assert.ok(known.contract.size >= 6 && known['client-compat-more'].size >= 6, 'the section headings are read');
  const missing: string[] = [];
  let cited = 0;
  for (const { file, text } of texts) {
    if (file === 'test/spec-citations.test.ts') continue;
    for (const m of text.matchAll(/\b(contract|client-compat-more)(?:\.md)? §\(?([0-9]+|[a-z])\b/g)) {
      cited++;
      if (!known[m[1] as keyof typeof known].has(m[2]!)) missing.push(`${file}: ${m[0]}`);
    }
  }
  assert.ok(cited > 50, `citations found (${cited})`);
  assert.deepEqual(missing, []);
});

test('no source cites a document outside the repository', () => {
  const outside = texts.filter(({ file, text }) => file !== 'test/spec-citations.test.ts' && /\.\.\/shared\/|\/work\/shared/.test(text));
  assert.deepEqual(outside.map((t) => t.file), []);
});

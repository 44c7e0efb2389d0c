#!/usr/bin/env node
// Runs every test file (test/**/*.test.ts) with Node's built-in test runner.
// Node 20's --test takes no globs, so the files are found here. Extra arguments are passed through; a bare argument
// keeps the test files whose path contains it.
// dist/ is built first (`npm run build`), so the tests that start real processes run the sources as they are now.
// The tests run compiled (scripts/build-tests.mjs: each test file bundled into .test-build/), not through tsx's
// loader, which cost each test file a second of CPU to import the app (docs/DEVELOPING.md, performance ledger).
// Three test files run at once (GPUPLANE_TEST_CONCURRENCY): the tests wait on processes, Docker and timers often
// enough that a third keeps both cores busy.
// Without GPUPLANE_TEST_POSTGRES_URL the PostgreSQL half of the suite does not run: a notice says so, first and last.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { buildTests, outDir, root } from './build-tests.mjs';

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return name === 'helpers' ? [] : find(p);
    return name.endsWith('.test.ts') ? [p] : [];
  });
}

const PG_NOTICE =
  'NOTICE: GPUPLANE_TEST_POSTGRES_URL is not set: the tests ran on SQLite only; the PostgreSQL half did NOT run ' +
  '(set it, e.g. GPUPLANE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test npm test)';
const withoutPg = !process.env.GPUPLANE_TEST_POSTGRES_URL;
const notice = (text) => process.stderr.write(`\n${'='.repeat(20)}\n${text}\n${'='.repeat(20)}\n\n`);

const args = process.argv.slice(2);
const filters = args.filter((a) => !a.startsWith('-'));
const flags = args.filter((a) => a.startsWith('-'));
let files = find(join(root, 'test')).map((f) => f.slice(root.length + 1)).sort();
if (filters.length) files = files.filter((f) => filters.some((x) => f.includes(x)));

if (withoutPg) notice(PG_NOTICE.replace('ran', 'run'));
const built = spawnSync(process.execPath, [join(import.meta.dirname, 'build.mjs')], { stdio: 'inherit' });
if (built.status !== 0) process.exit(built.status ?? 1);
await buildTests();
const compiled = files.map((f) => join(outDir, f.replace(/\.ts$/, '.js')));
const result = spawnSync(
  process.execPath,
  ['--enable-source-maps', '--test', '--test-concurrency=' + (process.env.GPUPLANE_TEST_CONCURRENCY ?? '3'), '--test-timeout=120000', ...flags, ...compiled],
  { stdio: 'inherit', env: { ...process.env, GPUPLANE_LOG_LEVEL: process.env.GPUPLANE_LOG_LEVEL ?? 'silent' } },
);
if (withoutPg) notice(PG_NOTICE);
process.exit(result.status ?? 1);

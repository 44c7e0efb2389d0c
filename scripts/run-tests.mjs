#!/usr/bin/env node
// Runs every test file (test/**/*.test.ts) with Node's built-in test runner through tsx.
// Node 20's --test takes no globs, so the files are found here. Extra arguments are passed through.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return name === 'helpers' ? [] : find(p);
    return name.endsWith('.test.ts') ? [p] : [];
  });
}

const args = process.argv.slice(2);
const filters = args.filter((a) => !a.startsWith('-'));
const flags = args.filter((a) => a.startsWith('-'));
let files = find('test').sort();
if (filters.length) files = files.filter((f) => filters.some((x) => f.includes(x)));
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=120000', ...flags, ...files],
  { stdio: 'inherit', env: { ...process.env, GPUPLANE_LOG_LEVEL: process.env.GPUPLANE_LOG_LEVEL ?? 'silent' } },
);
process.exit(result.status ?? 1);

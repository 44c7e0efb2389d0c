#!/usr/bin/env node
// `npm test`: the type check (tsc --noEmit) and the dependency rules (dependency-cruiser) run beside the test files
// (scripts/run-tests.mjs), not before them: the tests leave part of the two cores idle while they wait on processes,
// Docker and timers, and the checks fill it (the suite's wall time is in docs/PERFORMANCE.md).
// Their output is printed after the tests'; any of the three failing fails the command. Arguments go to run-tests.
// With a file filter (`npm test -- test/x.test.ts`) only those tests run, in seconds: the checks are of the whole tree
// and take longer than one file (`npx tsc --noEmit`, `npm run deps` run them alone).
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const bin = (name) => join(root, 'node_modules', '.bin', name);

/** Runs a check with its output kept for the end. */
function check(name, cmd, args) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => resolve({ name, code: code ?? 1, out }));
  });
}

const filtered = process.argv.slice(2).some((a) => !a.startsWith('-'));
const checks = filtered ? Promise.resolve([]) : Promise.all([
  check('type check (tsc --noEmit)', bin('tsc'), ['--noEmit']),
  check('console type check (tsc -p console)', bin('tsc'), ['--noEmit', '-p', join('console', 'tsconfig.json')]),
  check('dependency rules (depcruise)', bin('depcruise'), ['src', '--config', '.dependency-cruiser.cjs']),
]);
const tests = await new Promise((resolve) => {
  spawn(process.execPath, [join(root, 'scripts', 'run-tests.mjs'), ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' })
    .on('close', (code) => resolve(code ?? 1));
});
let failed = tests !== 0;
for (const c of await checks) {
  process.stdout.write(`\n== ${c.name}: ${c.code === 0 ? 'passed' : 'FAILED'}\n${c.code === 0 ? '' : c.out}`);
  if (c.code !== 0) failed = true;
}
process.exit(failed ? 1 : 0);

#!/usr/bin/env node
// Runs every test file (test/**/*.test.ts) with Node's built-in test runner.
// Node 20's --test takes no globs, so the files are found here. Extra arguments are passed through; a bare argument
// keeps the test files whose path contains it (a file's path, `test/x.test.ts`, `./test/x.test.ts` or absolute, keeps
// that file alone). One test of a file: add `--test-name-pattern=<its name>`.
// dist/ is built first (`npm run build`), so the tests that start real processes run the sources as they are now.
// The tests run compiled (scripts/build-tests.mjs: each test file bundled into .test-build/), not through tsx's
// loader, which cost each test file a second of CPU to import the app (docs/PERFORMANCE.md).
// Three test files run at once (GPUPLANE_TEST_CONCURRENCY): the tests wait on processes, Docker and timers often
// enough that a third keeps both cores busy.
// Without GPUPLANE_TEST_POSTGRES_URL the PostgreSQL half of the suite does not run: a notice says so, first and last,
// and the tests that exist for PostgreSQL alone fail, naming the variable (tests never skip). In CI (`CI` set) the run
// stops at once without it: a CI that cannot reach its database must not pass.
// Then the web console's browser tests (console/e2e/*.spec.ts, Playwright with Debian's chromium; console/README.md),
// filtered the same way; they need no PostgreSQL (each starts its own server process).
import { existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { spawn, spawnSync } from 'node:child_process';
import { buildTests, outDir, root } from './build-tests.mjs';

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return name === 'helpers' ? [] : find(p);
    return name.endsWith('.test.ts') ? [p] : [];
  });
}

const PG_NOTICE =
  'NOTICE: GPUPLANE_TEST_POSTGRES_URL is not set: the tests ran on SQLite only; the PostgreSQL half did NOT run and ' +
  'the PostgreSQL-only tests fail ' +
  '(set it, e.g. GPUPLANE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test npm test)';
const withoutPg = !process.env.GPUPLANE_TEST_POSTGRES_URL;
const notice = (text) => process.stderr.write(`\n${'='.repeat(20)}\n${text}\n${'='.repeat(20)}\n\n`);

const args = process.argv.slice(2);
// A filter naming a file (relative to where the command runs, or absolute) is taken as that file's path from the root.
const filters = args.filter((a) => !a.startsWith('-')).map((a) => (existsSync(resolve(a)) ? relative(root, resolve(a)) : a));
const flags = args.filter((a) => a.startsWith('-'));
let files = find(join(root, 'test')).map((f) => f.slice(root.length + 1)).sort();
if (filters.length) files = files.filter((f) => filters.some((x) => f.includes(x)));
let specs = readdirSync(join(root, 'console', 'e2e')).filter((f) => f.endsWith('.spec.ts')).map((f) => `console/e2e/${f}`).sort();
if (filters.length) specs = specs.filter((f) => filters.some((x) => f.includes(x)));

if (withoutPg) notice(PG_NOTICE.replace('ran', 'run'));
if (withoutPg && process.env.CI) {
  process.stderr.write('CI is set and GPUPLANE_TEST_POSTGRES_URL is not: the PostgreSQL half cannot run, so the run fails\n');
  process.exit(1);
}
// Not when GPUPLANE_TEST_DIST_BUILT=1 says dist/ was just built from these sources: .ci/run, after `npm ci` (whose
// `prepare` builds it).
if (process.env.GPUPLANE_TEST_DIST_BUILT !== '1') {
  const built = spawnSync(process.execPath, [join(import.meta.dirname, 'build.mjs')], { stdio: 'inherit' });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
await buildTests(filters.length ? files : undefined);
// Longest first: files run three at a time, and a long file started near the end runs on alone while the other
// slots have nothing left (the suite's tail). A file's time: its wall seconds in the last run that ran it here
// (.test-output/test-times.txt, written below), else in scripts/test-times.txt (kept in git, for a clean clone: copy
// the former over it when files have grown or moved); a file in neither is guessed at a second per KB of its source.
const timesFile = join(root, '.test-output', 'test-times.txt');
/** `wall cpu path` lines: path → [wall, cpu] seconds. */
const readTimes = (path) => new Map(
  (existsSync(path) ? readFileSync(path, 'utf8') : '').split('\n').map((l) => l.trim().split(/\s+/)).filter((r) => r.length === 3)
    .map(([wall, cpu, f]) => [f, [Number(wall), Number(cpu)]]),
);
const times = new Map([...readTimes(join(import.meta.dirname, 'test-times.txt')), ...readTimes(timesFile)]);
const weight = (f) => (times.has(f) ? times.get(f)[0] : statSync(join(root, f)).size / 1000);
files.sort((a, b) => weight(b) - weight(a));
const compiled = files.map((f) => join(outDir, f.replace(/\.ts$/, '.js')));
if (compiled.length === 0 && specs.length === 0) {
  process.stderr.write(`no test file matches ${filters.join(' ')}\n`);
  process.exit(1);
}
// The browser tests run beside the node tests: they mostly wait (on the browser, the server, the virtual clock), so
// both cores stay busy and the suite's wall time grows by little. Playwright's own runner (its fixtures and
// web-first assertions), one worker; its output goes to a file, printed when the node tests are done.
const browserLog = join(root, '.test-output', 'console', 'playwright.log');
mkdirSync(dirname(browserLog), { recursive: true });
const browser = specs.length === 0 ? Promise.resolve(0) : new Promise((resolve) => {
  const out = openSync(browserLog, 'w');
  spawn(
    process.execPath,
    [join(root, 'node_modules', '@playwright', 'test', 'cli.js'), 'test', '--config', join(root, 'console', 'playwright.config.ts'), ...specs.map((f) => join(root, f))],
    { stdio: ['ignore', out, out], cwd: join(root, 'console'), env: { ...process.env, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1', FORCE_COLOR: '0' } },
  ).on('close', (code) => resolve(code ?? 1));
});
// (With no file matched, `node --test` would look for tests by itself: it is not run then.) The timeout catches a
// hung file: 480 s, as the longest (deposits-months: a month of virtual time on PostgreSQL) took 234 s in a whole run on
// this shared machine at load average 5-12, and other files passed 240 s at load 30 (scripts/test-times.txt).
// TAP goes to the output as the tests run; the failed tests alone also go to a file (scripts/failures-reporter.mjs),
// printed again at the end; and each file's wall and CPU seconds (scripts/test-file-times.mjs), the slowest printed at
// the end.
const failuresLog = join(root, '.test-output', 'failures.txt');
const runTimesLog = join(root, '.test-output', `test-times-${process.pid}.txt`);
rmSync(failuresLog, { force: true });
rmSync(runTimesLog, { force: true });
const reporters = ['--test-reporter=tap', '--test-reporter-destination=stdout', `--test-reporter=${join(import.meta.dirname, 'failures-reporter.mjs')}`, `--test-reporter-destination=${failuresLog}`];
const result = compiled.length === 0 ? { status: 0 } : spawnSync(
  process.execPath,
  ['--enable-source-maps', '--import', pathToFileURL(join(import.meta.dirname, 'test-file-times.mjs')).href, '--test', '--test-concurrency=' + (process.env.GPUPLANE_TEST_CONCURRENCY ?? '3'), '--test-timeout=480000', ...reporters, ...flags, ...compiled],
  { stdio: 'inherit', env: { ...process.env, GPUPLANE_LOG_LEVEL: process.env.GPUPLANE_LOG_LEVEL ?? 'silent', GPUPLANE_TEST_TIMES_LOG: runTimesLog } },
);
const browserStatus = await browser;
if (specs.length) process.stdout.write(`\n== web console browser tests (Playwright, ${specs.length} files)\n${readFileSync(browserLog, 'utf8')}`);
if (existsSync(runTimesLog)) {
  // The compiled file's path, as the source's.
  const source = (p) => relative(outDir, p).replaceAll('\\', '/').replace(/\.js$/, '.ts');
  const run = [...readTimes(runTimesLog)].map(([f, t]) => [source(f), t]).sort((a, b) => b[1][0] - a[1][0]);
  rmSync(runTimesLog, { force: true });
  // Merged into what is there now (another run in this tree may have written it meanwhile): a filtered run updates
  // its own files' times only.
  const merged = readTimes(timesFile);
  for (const [f, t] of run) merged.set(f, t);
  const line = ([f, [wall, cpu]]) => `${wall.toFixed(1).padStart(6)} ${cpu.toFixed(1).padStart(6)}  ${f}`;
  writeFileSync(timesFile, `${[...merged].sort((a, b) => b[1][0] - a[1][0]).map(line).join('\n')}\n`);
  if (run.length > 1) {
    const cpu = run.reduce((sum, [, t]) => sum + t[1], 0);
    process.stdout.write(`\n== slowest test files (wall and CPU seconds of each file's process, ${run.length} files: ${cpu.toFixed(0)} CPU-s in all; every file in ${timesFile.slice(root.length + 1)})\n${run.slice(0, 15).map(line).join('\n')}\n`);
  }
}
const failed = existsSync(failuresLog) ? readFileSync(failuresLog, 'utf8') : '';
if (failed) process.stdout.write(`\n== failed node tests\n${failed}`);
if (withoutPg) notice(PG_NOTICE);
process.exit((result.status ?? 1) || browserStatus);

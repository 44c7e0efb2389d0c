// The install (`npm ci`) as the README describes it: better-sqlite3 compiled from source with no binary download,
// no warning from npm about the project's own configuration, and no dependency that asks for a newer Node than the
// README and package.json name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';

const ROOT = join(import.meta.dirname, '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));

/** The environment without what npm passes to scripts (npm_config_*), as when a script reads its own configuration. */
function bareEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
}

test('npm reads the project configuration without an "Unknown project config" warning', () => {
  const run = spawnSync('npm', ['pkg', 'get', 'name'], { cwd: ROOT, env: bareEnv(), encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  assert.equal(JSON.parse(run.stdout), 'gpuplane');
  assert.doesNotMatch(run.stderr, /Unknown project config/);
});

test("better-sqlite3's install step (prebuild-install) is told to build from source, not to download a binary", () => {
  // prebuild-install reads its settings with `rc` from its working directory (the package's folder) upward, as
  // its bin.js does: rc.js called with the package's package.json.
  const rc = join(ROOT, 'node_modules', 'prebuild-install', 'rc.js');
  const script = `process.stdout.write(JSON.stringify(require(${JSON.stringify(rc)})(require('./package.json'))))`;
  const run = spawnSync(process.execPath, ['-e', script], {
    cwd: join(ROOT, 'node_modules', 'better-sqlite3'),
    env: bareEnv(),
    encoding: 'utf8',
  });
  assert.equal(run.status, 0, run.stderr);
  assert.equal(JSON.parse(run.stdout).buildFromSource, true);
});

test('every locked dependency supports the oldest Node the project names, and this one', () => {
  const oldest = semver.minVersion(pkg.engines.node)!.version;
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const named = /Node\.js (\d+(?:\.\d+)*) or newer/.exec(readme);
  assert.ok(named, 'the README names the oldest supported Node');
  assert.equal(semver.coerce(named[1])!.version, oldest, 'README and package.json engines agree');
  const refused: string[] = [];
  for (const [path, entry] of Object.entries<any>(lock.packages)) {
    const range: string | undefined = entry.engines?.node;
    if (!range) continue;
    for (const node of [oldest, process.versions.node]) {
      if (!semver.satisfies(node, range)) refused.push(`${path || pkg.name}@${entry.version} needs node ${range}, not ${node}`);
    }
  }
  assert.deepEqual(refused, []);
});

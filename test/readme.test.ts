// The README's examples work: every shell block of README.md runs, in order, against a fresh server started as
// `npm start` would (emulator mode, default seed and fleet) on a free port, with a virtual clock the test moves while
// a command waits (as real time would), SQLite in a temporary folder and a known owner key. The README's
// `http://127.0.0.1:8080` becomes that server's URL and `gpk_…` its owner key (also in $KEY, as the README's first
// block sets it); GPUPLANE_URL points the CLI at the server. Every command must succeed: bash stops at the first
// failure, and curl fails on an HTTP error status. Blocks the test cannot run are marked in the README with the reason
// (see test/helpers/readme-blocks.ts), and only those; vastai lines run with gpuplane's own CLI in the client's place.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '../src/sdk/client.js';
import { BIN, ROOT, startServer, type CliResult, type ServerProcess } from './cli-helpers.js';
import { commandsOf, markProblems, shellBlocks, unrunnable, type Block } from './helpers/readme-blocks.js';

const README_URL = 'http://127.0.0.1:8080';
const KEY_PLACEHOLDER = 'gpk_…';
const OWNER_KEY = 'gpk_readme_test_owner_key_0123456789';
/** The status line of a command waiting for an instance (`instance 3: loading (2s)`): the clock must move. */
const WAITING = /^instance \d+: \S+ \(\d+s\)$/m;
/** How far the clock moves each step while a command waits, and how often (real milliseconds). */
const ADVANCE_S = 10;
const ADVANCE_EVERY_MS = 200;
/**
 * Where the vastai client's start-up fetch goes without VAST_URL: Vast.ai, which this test treats as out of reach (a
 * refused port), as it is offline or on a network that reaches only gpuplane (issue 29 item 8).
 */
const VAST_AI_OFFLINE = 'http://127.0.0.1:9';
/**
 * Commands that stand in for programs not installed here: the vastai client by gpuplane's CLI (same commands). As
 * vast.py does before it reads its arguments, the stand-in first fetches the GPU names from `$VAST_URL` (else
 * Vast.ai), whatever `--url` says, and stops when that fails; then it talks to `$VAST_URL`, or to its `--url`.
 */
const STAND_INS = {
  vastai: `vastai() {
  command curl --silent --fail --max-time 10 "\${VAST_URL:-${VAST_AI_OFFLINE}}/api/v0/gpu_names/unique/" > /dev/null \\
    || { echo "vastai: cannot fetch the GPU names from \${VAST_URL:-${VAST_AI_OFFLINE}} (vast.py does at start, whatever --url says)" >&2; return 1; }
  GPUPLANE_URL="\${VAST_URL:-${VAST_AI_OFFLINE}}" node ${JSON.stringify(BIN)} "$@"
}`,
};
const STANDING_IN = /^(vastai\s|pip install vastai$)/;

const PRELUDE = [
  'set -euo pipefail',
  // A command that fails stops the block; curl fails on an HTTP error status too (and still shows the error body).
  'curl() { command curl --silent --show-error --fail-with-body "$@"; }',
].join('\n');

const blocks = shellBlocks(readFileSync(join(ROOT, 'README.md'), 'utf8'));

describe('the README marks exactly the blocks the test cannot run', () => {
  test('README.md', () => {
    assert.ok(blocks.length >= 5, 'the README has shell blocks');
    assert.deepEqual(markProblems(blocks), []);
  });

  test('the rule, on examples', () => {
    const md = (blocks: string) => shellBlocks(blocks.replace(/'''/g, '```'));
    const problems = markProblems(md(`
'''sh
npm ci && npm start
'''
<!-- not run by test/readme.test.ts: nothing to skip -->
'''sh
KEY=gpk_…   # a comment, even with "quotes"
curl -s 'http://x/a#b' \\
  -H "Authorization: Bearer $KEY"
npx gpuplane show user && gpuplane --help
'''
<!-- not run by test/readme.test.ts: it starts a server -->

'''bash
gpuplane serve --port 9000 &
'''
'''
curl -s http://x/ | jq .
'''
'''json
{"not": "shell"}
'''
`));
    assert.equal(problems.length, 3, problems.join('\n'));
    assert.match(problems[0], /line 2: the test cannot run "npm ci", "npm start"/);
    assert.match(problems[1], /line 6: marked as not run \(nothing to skip\), but the test can run it/);
    assert.match(problems[2], /line 17: the test cannot run "jq \."/);
    assert.deepEqual(unrunnable('gpuplane serve --port 9000 &'), ['gpuplane serve --port 9000', '&']);
    assert.deepEqual(commandsOf('a \\\n  b # c\n\n# d\ne'), ['a    b', 'e']);
  });

  // Issue 34: the seed file the README shows is the one its example loads (docs/examples/seed.json).
  test('the seed file shown is docs/examples/seed.json, as it is', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const shown = /`docs\/examples\/seed\.json`:\n\n```json\n([\s\S]*?)```/.exec(readme);
    assert.ok(shown, 'README shows docs/examples/seed.json');
    assert.equal(shown[1], readFileSync(join(ROOT, 'docs/examples/seed.json'), 'utf8'));
  });

  // vast.py fetches the GPU names from $VAST_URL (else Vast.ai) at start, whatever --url says (issue 29 item 8).
  test('every block with vastai commands sets VAST_URL before the first, and none relies on --url alone', () => {
    const withVastai = blocks.filter((b) => commandsOf(b.text).some((c) => /^vastai\s/.test(c)));
    assert.ok(withVastai.length >= 2, 'the vastai section and the real-host example');
    for (const b of withVastai) {
      const commands = commandsOf(b.text);
      const first = commands.findIndex((c) => /^vastai\s/.test(c));
      const setsUrl = commands.findIndex((c) => /^export\s+VAST_URL=\S+/.test(c));
      assert.ok(setsUrl >= 0 && setsUrl < first, `README line ${b.line}: export VAST_URL=… before the first vastai command`);
      assert.deepEqual(commands.filter((c) => /^vastai\s.*--url\b/.test(c)), [], `README line ${b.line}: VAST_URL, not --url`);
    }
  });
});

describe('every shell block of the README runs against a fresh server', () => {
  let srv: ServerProcess;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpuplane-readme-'));
    srv = await startServer([], [
      '--clock', 'virtual', '--database-url', `sqlite:${join(dir, 'gpuplane.db')}`, '--bootstrap-api-key', OWNER_KEY,
      '--secret-key', 'readme-test-secret-key-0123456789',
    ]);
  });
  after(async () => {
    await srv?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function env(): NodeJS.ProcessEnv {
    const e: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GPUPLANE_') && k !== 'COLUMNS') e[k] = v;
    // npm_config_offline: `npx gpuplane` runs this package's own bin and must never reach for the registry.
    return { ...e, KEY: OWNER_KEY, GPUPLANE_URL: srv.url, XDG_CONFIG_HOME: join(dir, 'config'), npm_config_offline: 'true' };
  }

  /** Runs a script in bash; while it waits on an instance, moves the virtual clock as real time would move. */
  async function bash(script: string): Promise<CliResult> {
    const proc = spawn('bash', ['-c', `${PRELUDE}\n${script}`], { cwd: ROOT, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let signal: () => void = () => {};
    const waiting = new Promise<void>((resolve) => (signal = resolve));
    proc.stdout.on('data', (d) => (stdout += String(d)));
    proc.stderr.on('data', (d) => {
      stderr += String(d);
      if (WAITING.test(stderr)) signal();
    });
    let closed = false;
    const done = new Promise<number | null>((resolve) => proc.on('close', (code) => resolve(code))).finally(() => (closed = true));
    await Promise.race([done, waiting]);
    const emu = createClient({ url: srv.url, apiKey: OWNER_KEY }).emulator;
    while (!closed) {
      await emu.advance(ADVANCE_S);
      await new Promise((r) => setTimeout(r, ADVANCE_EVERY_MS));
    }
    return { code: await done, stdout, stderr };
  }

  const local = (text: string) => text.split(README_URL).join(srv.url).split(KEY_PLACEHOLDER).join(OWNER_KEY);

  test('the vastai stand-in stops as vast.py does with --url alone (Vast.ai out of reach), and runs with VAST_URL', async () => {
    const urlOnly = await bash(local(`${STAND_INS.vastai}\nvastai --url ${README_URL} --api-key "$KEY" show user`));
    assert.notEqual(urlOnly.code, 0, urlOnly.stdout);
    assert.match(urlOnly.stderr, /cannot fetch the GPU names from http:\/\/127\.0\.0\.1:9 /);
    const withEnv = await bash(local(`${STAND_INS.vastai}\nexport VAST_URL=${README_URL}\nvastai --api-key "$KEY" show user`));
    assert.equal(withEnv.code, 0, withEnv.stderr);
  });
  const title = (b: Block) => `line ${b.line}${b.mark ? ' (marked)' : ''}: ${commandsOf(b.text)[0] ?? ''}`;

  // Only what the test can run is run (never `npm ci` in this checkout, whatever the marks say: their test above
  // reports a block that cannot run). A marked block runs too when stand-ins cover all it cannot run (the vastai
  // client): each of its lines is checked.
  const standIn = (b: Block) => b.mark !== undefined && unrunnable(b.text).every((c) => STANDING_IN.test(c));
  for (const b of blocks.filter((x) => unrunnable(x.text).length === 0 || standIn(x))) {
    test(title(b), async () => {
      const script = standIn(b) ? `${STAND_INS.vastai}\n${b.text.split('\n').filter((l) => !/^\s*pip install /.test(l)).join('\n')}` : b.text;
      const r = await bash(local(script));
      assert.equal(r.code, 0, `README line ${b.line} failed (exit ${r.code}):\n${b.text}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`);
    });
  }
});

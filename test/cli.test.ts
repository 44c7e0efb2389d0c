// The gpuplane CLI against a real server process (virtual clock): client options, the saved key, help, output (tables
// and --raw), errors (server message on stderr, non-zero exit), and the emulator commands. The CLI runs in this
// process (runCli with collected output); the first tests run it as the real binary, as a user would.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import { buildProgram } from '../src/cli/program.js';
import { createClient } from '../src/sdk/client.js';
import { BIN, OWNER_KEY, runCli, runCliProcess, startServer, T0, tempConfigHome, type ServerProcess } from './cli-helpers.js';

let srv: ServerProcess;
let home: ReturnType<typeof tempConfigHome>;
/** Runs the CLI against the test server with the owner's key, unless the test overrides. */
const cli = (args: string[], env: Record<string, string | undefined> = {}) =>
  runCli(args, { GPUPLANE_URL: srv.url, GPUPLANE_API_KEY: OWNER_KEY, XDG_CONFIG_HOME: home.dir, ...env });

const sdk = () => createClient({ url: srv.url, apiKey: OWNER_KEY });

before(async () => {
  srv = await startServer();
  home = tempConfigHome();
});
after(async () => {
  await srv?.close();
  home?.cleanup();
});

describe('the binary, as a process', () => {
  test('bin/gpuplane.mjs answers a command with the reply on stdout and exit 0', async () => {
    const r = await runCliProcess(['show', 'user', '--raw'], { GPUPLANE_URL: srv.url, GPUPLANE_API_KEY: OWNER_KEY, XDG_CONFIG_HOME: home.dir });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).email, 'owner@gpuplane.local');
  });

  test('a reader that closes the pipe early (`… --help | head -1`) ends it quietly with exit 0, no stack trace', async () => {
    const proc = spawn(process.execPath, [BIN, 'create', 'instance', '--help'], { cwd: join(import.meta.dirname, '..'), stdio: ['ignore', 'pipe', 'pipe'] });
    // The reader is gone before the help is written: every write meets a closed pipe (EPIPE).
    proc.stdout.destroy();
    let stderr = '';
    proc.stderr.on('data', (d) => (stderr += String(d)));
    const code = await new Promise((r) => proc.on('close', r));
    assert.equal(stderr, '');
    assert.equal(code, 0);
  });

  test('its exit code is the command\'s: 2 for a usage error, 1 for a refusal, with the message on stderr', async () => {
    const usage = await runCliProcess(['frobnicate']);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /unknown command 'frobnicate'/);
    const refused = await runCliProcess(['show', 'user'], { GPUPLANE_URL: srv.url, GPUPLANE_API_KEY: 'gpk_wrong_key_000000000000', XDG_CONFIG_HOME: home.dir });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /HTTP 401/);
    assert.equal(refused.stdout, '');
  });
});

describe('help', () => {
  test('gpuplane --help lists the commands, client options, exit codes and examples', async () => {
    const r = await runCli(['--help']);
    assert.equal(r.code, 0);
    for (const s of ['--url', '--api-key', '--raw', 'GPUPLANE_URL', 'GPUPLANE_API_KEY', 'Exit codes', 'Examples:', 'serve', 'show']) {
      assert.ok(r.stdout.includes(s), `--help mentions ${s}`);
    }
  });

  test('every command has a description and an example in its help', () => {
    const leaves: Command[] = [];
    (function walk(c: Command) {
      if (c.commands.length === 0) leaves.push(c);
      c.commands.forEach(walk);
    })(buildProgram());
    assert.ok(leaves.length >= 8);
    for (const c of leaves) {
      const name = `${c.parent?.name()} ${c.name()}`;
      assert.ok(c.description().length > 10, `${name} has a description`);
      let help = '';
      c.configureOutput({ writeOut: (s) => (help += s), writeErr: (s) => (help += s) });
      c.outputHelp();
      assert.match(help, /Example:\n {2}gpuplane /, `${name} help has an example`);
    }
  });

  test('a subcommand --help exits 0 with its usage', async () => {
    const r = await runCli(['show', 'user', '--help']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /Usage: gpuplane show user/);
  });

  test('an unknown command or option is a usage error: exit 2, nothing sent', async () => {
    const a = await runCli(['frobnicate']);
    assert.equal(a.code, 2);
    assert.match(a.stderr, /unknown command 'frobnicate'/);
    const b = await cli(['show', 'user', '--colour']);
    assert.equal(b.code, 2);
    assert.match(b.stderr, /unknown option '--colour'/);
  });
});

describe('client options and the saved key', () => {
  test('--url and --api-key flags reach the server', async () => {
    const r = await runCli(['--url', srv.url, '--api-key', OWNER_KEY, 'show', 'user', '--raw'], { XDG_CONFIG_HOME: home.dir });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).email, 'owner@gpuplane.local');
  });

  test('set api-key saves the key with mode 0600; later commands use it', async () => {
    const own = tempConfigHome();
    try {
      const env = { GPUPLANE_URL: srv.url, XDG_CONFIG_HOME: own.dir };
      const before = await runCli(['show', 'user'], env);
      assert.equal(before.code, 1);
      assert.match(before.stderr, /auth_error/);
      assert.match(before.stderr, /gpuplane set api-key/, 'a hint names the ways to give a key');

      const set = await runCli(['set', 'api-key', OWNER_KEY], env);
      assert.equal(set.code, 0, set.stderr);
      const file = join(own.dir, 'gpuplane', 'api_key');
      assert.equal(readFileSync(file, 'utf8').trim(), OWNER_KEY);
      assert.equal(statSync(file).mode & 0o777, 0o600);

      const afterSet = await runCli(['show', 'user', '--raw'], env);
      assert.equal(afterSet.code, 0, afterSet.stderr);
      assert.equal(JSON.parse(afterSet.stdout).email, 'owner@gpuplane.local');

      // The environment variable wins over the saved key, and the flag over both.
      const env2 = await runCli(['show', 'user'], { ...env, GPUPLANE_API_KEY: 'gpk_wrong_key_000000000000' });
      assert.equal(env2.code, 1);
      const flag = await runCli(['--api-key', OWNER_KEY, 'show', 'user'], { ...env, GPUPLANE_API_KEY: 'gpk_wrong_key_000000000000' });
      assert.equal(flag.code, 0);
    } finally {
      own.cleanup();
    }
  });

  test('set api-key refuses something that is not a key', async () => {
    const r = await cli(['set', 'api-key', 'two words']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /does not look like an API key/);
  });

  test('a malformed --url is a usage error (exit 2); an unreachable server exits 1 saying so', async () => {
    const bad = await cli(['show', 'user'], { GPUPLANE_URL: 'ftp://example.com' });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--url must be an http/);
    const down = await cli(['show', 'user'], { GPUPLANE_URL: 'http://127.0.0.1:1' });
    assert.equal(down.code, 1);
    assert.match(down.stderr, /cannot reach http:\/\/127\.0\.0\.1:1/);
  });
});

describe('show user', () => {
  test('human output: aligned key/value lines with units; the key is not printed', async () => {
    const r = await cli(['show', 'user']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^email {12}owner@gpuplane\.local$/m);
    assert.match(r.stdout, /^credit {11}\$10000\.00$/m);
    assert.match(r.stdout, /^2FA {14}disabled$/m);
    assert.ok(!r.stdout.includes(OWNER_KEY));
  });

  test('--raw prints the user object as JSON, without api_key', async () => {
    const r = await cli(['show', 'user', '--raw']);
    const u = JSON.parse(r.stdout);
    assert.equal(u.is_admin, true);
    assert.equal(u.credit, 10000);
    assert.equal(u.api_key, undefined);
  });

  test('a wrong key: exit 1 and the server message; with --raw the error object on stderr', async () => {
    const r = await cli(['show', 'user'], { GPUPLANE_API_KEY: 'gpk_not_a_real_key_0000000000' });
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^gpuplane: invalid or revoked API key \(HTTP 401, auth_error\)$/m);
    const raw = await cli(['show', 'user', '--raw'], { GPUPLANE_API_KEY: 'gpk_not_a_real_key_0000000000' });
    assert.equal(raw.code, 1);
    assert.deepEqual(JSON.parse(raw.stderr), { success: false, error: 'auth_error', msg: 'invalid or revoked API key' });
  });
});

describe('emu commands', () => {
  test('clock and advance move the virtual clock', async () => {
    const c = await cli(['emu', 'clock', '--raw']);
    const now = JSON.parse(c.stdout).now;
    assert.ok(now >= T0);
    const a = await cli(['emu', 'advance', '90']);
    assert.equal(a.code, 0, a.stderr);
    assert.match(a.stdout, new RegExp(`^clock now ${now + 90} \\(`));
    const bad = await cli(['emu', 'advance', '-5']);
    assert.equal(bad.code, 2);
  });

  test('create-user prints the new key once; the new user is not an admin and cannot drive the emulator', async () => {
    const r = await cli(['emu', 'create-user', '--email', 'cli-ada@example.com', '--credit', '12.5', '--raw']);
    assert.equal(r.code, 0, r.stderr);
    const { user, api_key } = JSON.parse(r.stdout);
    assert.equal(user.credit, 12.5);
    const me = await cli(['show', 'user', '--raw'], { GPUPLANE_API_KEY: api_key });
    assert.equal(JSON.parse(me.stdout).email, 'cli-ada@example.com');
    const denied = await cli(['emu', 'clock'], { GPUPLANE_API_KEY: api_key });
    assert.equal(denied.code, 1);
    assert.match(denied.stderr, /HTTP 403, permission_denied/);
    const dup = await cli(['emu', 'create-user', '--email', 'cli-ada@example.com']);
    assert.equal(dup.code, 1);
    assert.match(dup.stderr, /already exists \(HTTP 409, conflict\)/);
  });

  test('outbox is a table; an unknown channel is a usage error', async () => {
    const r = await cli(['emu', 'outbox']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout.split('\n')[0], /^ID\s+Channel\s+To\s+Code\s+Sent \(UTC\)\s+Text$/);
    const bad = await cli(['emu', 'outbox', '--channel', 'fax']);
    assert.equal(bad.code, 2);
  });

  test('credit adds and removes dollars; an unknown user is the server 404', async () => {
    const r = await cli(['emu', 'create-user', '--email', 'cli-credit@example.com', '--credit', '10', '--raw']);
    const { user, api_key } = JSON.parse(r.stdout);
    const add = await cli(['emu', 'credit', String(user.id), '2.5']);
    assert.equal(add.code, 0, add.stderr);
    assert.equal(add.stdout.trim(), `user ${user.id} credit now $12.50`);
    const take = await cli(['emu', 'credit', String(user.id), '-4', '--raw']);
    assert.equal(take.code, 0, take.stderr);
    assert.deepEqual(JSON.parse(take.stdout), { success: true, credit: 8.5 });
    const me = await cli(['show', 'user', '--raw'], { GPUPLANE_API_KEY: api_key });
    assert.equal(JSON.parse(me.stdout).credit, 8.5);
    const unknown = await cli(['emu', 'credit', '999999', '1']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /HTTP 404, not_found/);
    assert.equal((await cli(['emu', 'credit', 'ada', '1'])).code, 2);
    // By account e-mail too (issue 29 item 10: only an id was taken, and nothing finds an id by e-mail).
    const byEmail = await cli(['emu', 'credit', 'CLI-credit@example.com', '1.5']);
    assert.equal(byEmail.code, 0, byEmail.stderr);
    assert.equal(byEmail.stdout.trim(), 'user CLI-credit@example.com credit now $10.00');
    const nobody = await cli(['emu', 'credit', 'nobody-here@example.com', '1']);
    assert.equal(nobody.code, 1);
    assert.equal(nobody.stderr, 'gpuplane: no user has the e-mail nobody-here@example.com (HTTP 404, not_found)\n');
  });

  test('add-machine lists new offers that search finds; a bad field is the server 400', async () => {
    const r = await cli(['emu', 'add-machine', '--gpu-name', 'H100 SXM', '--num-gpus', '2', '--price-gpu', '3.25', '--raw']);
    assert.equal(r.code, 0, r.stderr);
    const { machine_id, offer_ids } = JSON.parse(r.stdout);
    assert.ok(Number.isInteger(machine_id) && offer_ids.length > 0);
    const found = await sdk().offers.search({ machine_id: { eq: machine_id }, limit: 100 });
    assert.deepEqual(found.offers.map((o) => o.id).sort((a, b) => a - b), [...offer_ids].sort((a, b) => a - b));
    assert.ok(found.offers.every((o) => o.gpu_name === 'H100 SXM'));
    const bad = await cli(['emu', 'add-machine', '--reliability', '2']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /reliability.*\(HTTP 400, bad_request\)/);
  });

  test('load on an unknown endpoint is the server 404; a negative load is a usage error', async () => {
    const r = await cli(['emu', 'load', '999999', '5']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /HTTP 404, not_found/);
    assert.equal((await cli(['emu', 'load', '1', '-1'])).code, 2);
  });

  test('an unknown fault is the server 400 with its message', async () => {
    const r = await cli(['emu', 'fault', 'meteor', '--instance', '1']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /unknown fault "meteor".*\(HTTP 400, bad_request\)/);
  });
});

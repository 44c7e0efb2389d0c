// `login` and the `tfa` commands (the CLI run in the test's process) against a real server (virtual clock): the whole 2FA life cycle,
// with the QR code, the saved session key and the error paths.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from '../src/sdk/client.js';
import { totpCode } from '../src/tfa/totp.js';
import { OWNER_KEY, tempConfigHome, useServer } from './cli-helpers.js';

const server = useServer();
const cli = (args: string[], env: Record<string, string | undefined> = {}) => server.cli(args, env);
const sdk = (apiKey = OWNER_KEY) => createClient({ url: server.url(), apiKey });
let userN = 0;
const newUser = (extra: Record<string, unknown> = {}) => sdk().emulator.createUser({ email: `cli-acct-${process.pid}-${userN++}@example.com`, ...extra });

describe('login and tfa', () => {
  const now = async () => (await sdk().emulator.clock()).now;

  test('login without 2FA saves the session key; a wrong password is the server error', async () => {
    const own = tempConfigHome();
    try {
      const email = 'cli-login@example.com';
      await sdk().emulator.createUser({ email, password: 'pw-123456789' });
      const env = { XDG_CONFIG_HOME: own.dir, GPUPLANE_API_KEY: undefined as unknown as string };
      const bad = await cli(['login', '--username', email, '--password', 'wrong'], env);
      assert.equal(bad.code, 1);
      const ok = await cli(['login', '--username', email, '--password', 'pw-123456789'], env);
      assert.equal(ok.code, 0, ok.stderr);
      assert.match(ok.stdout, /session key saved to/);
      const me = await cli(['show', 'user', '--raw'], env);
      assert.equal(JSON.parse(me.stdout).email, email);
    } finally {
      own.cleanup();
    }
  });

  test('the 2FA life cycle: authorize by e-mail, totp-setup with a QR code, activate, update, login, regen-codes, delete', async () => {
    const own = tempConfigHome();
    try {
      const email = 'cli-tfa@example.com';
      const { api_key } = await sdk().emulator.createUser({ email, password: 'pw-123456789' });
      const env = { GPUPLANE_API_KEY: api_key, XDG_CONFIG_HOME: own.dir };
      const st = await cli(['tfa', 'status'], env);
      assert.match(st.stdout, /^2FA: disabled; backup codes left: 0/m);

      const auth = await cli(['tfa', 'authorize', '--method', 'email', '--raw'], env);
      assert.equal(auth.code, 0, auth.stderr);
      const secret = JSON.parse(auth.stdout).secret;
      const { messages } = await sdk().emulator.outbox({ to: email, channel: 'email' });
      const code = messages.at(-1)!.code!;
      const wrong = await cli(['tfa', 'authorize-finish', '--code', code === '000000' ? '111111' : '000000', '--secret', secret], env);
      assert.equal(wrong.code, 1);
      assert.equal((await cli(['tfa', 'authorize-finish', '--code', code, '--secret', secret], env)).code, 0);

      const setup = await cli(['tfa', 'totp-setup'], env);
      assert.equal(setup.code, 0, setup.stderr);
      assert.match(setup.stdout, /[▀▄█]/, 'a QR code drawn in the terminal');
      const totp = /enter the secret: (\S+)/.exec(setup.stdout)![1];
      assert.match(setup.stdout, /otpauth:\/\/totp\//);

      const bad = await cli(['tfa', 'activate', '000000', '--secret', totp], env);
      assert.equal(bad.code, 1);
      const act = await cli(['tfa', 'activate', totpCode(totp, await now()), '--secret', totp, '--label', 'phone'], env);
      assert.equal(act.code, 0, act.stderr);
      const codes = [...act.stdout.matchAll(/^ {2}([A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4})$/gm)].map((m) => m[1]);
      assert.equal(codes.length, 10);

      const status = JSON.parse((await cli(['tfa', 'status', '--raw'], env)).stdout);
      assert.equal(status.tfa_enabled, true);
      const methodId = status.methods[0].id;
      assert.equal((await cli(['tfa', 'update', '--method-id', String(methodId), '--label', 'new phone'], env)).code, 0);
      assert.match((await cli(['tfa', 'status'], env)).stdout, /new phone/);
      assert.equal((await cli(['tfa', 'update', '--method-id', String(methodId)], env)).code, 2, 'nothing to change');

      // A fresh TOTP step for each use (codes are single-use).
      await sdk().emulator.advance(30);
      const login = await cli(['tfa', 'login', '--method', 'totp', '--code', totpCode(totp, await now())], env);
      assert.equal(login.code, 0, login.stderr);
      const saved = readFileSync(join(own.dir, 'gpuplane', 'api_key'), 'utf8').trim();
      assert.notEqual(saved, api_key, 'the session key is saved');
      const me = await cli(['show', 'user', '--raw'], { XDG_CONFIG_HOME: own.dir, GPUPLANE_API_KEY: undefined as unknown as string });
      assert.equal(JSON.parse(me.stdout).email, email, 'and used by later commands');

      const regen = await cli(['tfa', 'regen-codes', '--backup-code', codes[0]], env);
      assert.equal(regen.code, 0, regen.stderr);
      assert.equal([...regen.stdout.matchAll(/^ {2}[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}$/gm)].length, 10);
      const reused = await cli(['tfa', 'regen-codes', '--backup-code', codes[1]], env);
      assert.equal(reused.code, 1, 'the old set is gone');

      await sdk().emulator.advance(30);
      const del = await cli(['tfa', 'delete', '--method', 'totp', '--code', totpCode(totp, await now())], env);
      assert.equal(del.code, 0, del.stderr);
      assert.match(del.stdout, /2FA Successfully Disabled/);
      assert.match((await cli(['tfa', 'status'], env)).stdout, /^2FA: disabled/m);
    } finally {
      own.cleanup();
    }
  });
});

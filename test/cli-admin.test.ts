// `gpuplane admin set-password` (issue 29 item 7): the owner, made without a password, gets one on the server's
// machine and can then log in to the web console; a short password or an unknown account is refused. Run in-process
// against a server's SQLite file (the command is one UPDATE through the users feature, as the API's paths are).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admin } from '../src/cli/admin.js';
import { createTestApp } from './helpers/harness.js';
import { OWNER_EMAIL } from '../src/users/users-service.js';

const dir = mkdtempSync(join(tmpdir(), 'gpuplane-admin-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function runAdmin(args: string[], input: string) {
  let stdout = '';
  let stderr = '';
  const stdin = Object.assign(Readable.from([input]), { isTTY: false });
  const code = await admin(args, {}, { stdin, stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) } });
  return { code, stdout, stderr };
}

test('admin set-password: the owner logs in to the console with it; short passwords and unknown accounts are refused', async () => {
  const url = `sqlite:${join(dir, 'g.db')}`;
  const app = await createTestApp('sqlite', { config: { GPUPLANE_DATABASE_URL: url } });
  try {
    const before = await app.request('POST', '/api/v0/auth/login/', { key: null, body: { username: OWNER_EMAIL, password: 'owner password', client: 'ui' } });
    assert.equal(before.status, 401, 'the owner has no password at first');
    const short = await runAdmin(['set-password', '--database-url', url, '--password-stdin'], 'short\n');
    assert.equal(short.code, 2);
    assert.match(short.stderr, /8 to 1024 characters/);
    const ok = await runAdmin(['set-password', '--database-url', url, '--password-stdin'], 'owner password\n');
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, new RegExp(`password of ${OWNER_EMAIL} is set`));
    assert.doesNotMatch(ok.stdout + ok.stderr, /owner password/, 'the password is never echoed');
    const s = await app.request('POST', '/api/v0/auth/login/', { key: null, body: { username: OWNER_EMAIL, password: 'owner password', client: 'ui' } });
    assert.equal(s.status, 200, s.raw);
    assert.equal(s.body.is_admin, true);
    const nobody = await runAdmin(['set-password', '--database-url', url, '--email', 'nobody@example.com', '--password-stdin'], 'owner password\n');
    assert.equal(nobody.code, 1);
    assert.match(nobody.stderr, /no account nobody@example\.com/);
    assert.equal((await runAdmin(['set-password', '--database-url', url, '--bogus'], '')).code, 2);
  } finally {
    await app.close();
  }
});

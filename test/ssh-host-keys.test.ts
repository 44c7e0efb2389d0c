// The agent's per-instance SSH host keys (src/agent/ssh/host-keys.ts): ssh2 writes about 1 ed25519 key in 250 that its
// own parser refuses, and a server given one drops every connection (a CI run's direct SSH failed so). Every key made
// must parse, and a stored key that does not is replaced.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ssh2 from 'ssh2';
import { hostKeyPath, instanceHostKey, HOST_KEYS_DIR } from '../src/agent/ssh/host-keys.js';

test('every host key made parses (2,000 instances: ~8 would not without the check)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpuplane-host-keys-'));
  try {
    for (let id = 1; id <= 2000; id++) {
      const key = instanceHostKey(dir, id);
      assert.ok(!(ssh2.utils.parseKey(key) instanceof Error), `instance ${id}'s key parses`);
      assert.equal(instanceHostKey(dir, id), key, 'the stored key is kept');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a stored key ssh2 cannot read is replaced by one it can', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpuplane-host-keys-'));
  try {
    mkdirSync(join(dir, HOST_KEYS_DIR), { recursive: true, mode: 0o700 });
    writeFileSync(hostKeyPath(dir, 7), '-----BEGIN OPENSSH PRIVATE KEY-----\nbm90IGEga2V5\n-----END OPENSSH PRIVATE KEY-----\n', { mode: 0o600 });
    const key = instanceHostKey(dir, 7);
    assert.ok(!(ssh2.utils.parseKey(key) instanceof Error));
    assert.equal(readFileSync(hostKeyPath(dir, 7), 'utf8'), key);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

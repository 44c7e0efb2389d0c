// The agent data plane's pure parts (src/agent/ssh/): what `stat -c` prints read back (names with spaces and newlines),
// the rsync daemon's configuration and the client command it answers, where port forwarding may go, `ls -l`'s long
// names, touch's time format, the host key file (made once, 0600, the same key after), and authorized_keys' text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseStatLines, touchTime } from '../src/agent/ssh/container-files.js';
import { isRsyncDaemonCommand, rsyncdConfig } from '../src/agent/ssh/rsync-daemon.js';
import { forwardTarget } from '../src/agent/ssh/ssh-server.js';
import { longName } from '../src/agent/ssh/sftp-server.js';
import { hostKeyPath, instanceHostKey } from '../src/agent/ssh/host-keys.js';
import { authorizedKeysText } from '../src/agent/ssh/authorized-keys.js';

test('stat lines: the fields, a name with spaces, a name with a newline continues its record', () => {
  const out = '4096 41ed 0 0 1700000000 1700000100 .\n12 81a4 1000 100 1700000001 1700000002 a file\n3 81a4 0 0 1 2 two\nlines\n';
  const e = parseStatLines(out);
  assert.equal(e.length, 3);
  assert.deepEqual(e[0], { name: '.', attrs: { size: 4096, mode: 0o40755, uid: 0, gid: 0, atime: 1700000000, mtime: 1700000100 } });
  assert.equal(e[1].name, 'a file');
  assert.equal(e[1].attrs.mode, 0o100644);
  assert.equal(e[1].attrs.uid, 1000);
  assert.equal(e[2].name, 'two\nlines');
  assert.deepEqual(parseStatLines(''), []);
});

test("rsync: the client's daemon command is recognised, nothing else; the module is the instance, chrooted to its root", () => {
  assert.ok(isRsyncDaemonCommand('rsync --server --daemon .'));
  assert.ok(isRsyncDaemonCommand('rsync --server --daemon -vlogDtprze.iLsfxCIvu .'));
  assert.ok(!isRsyncDaemonCommand('rsync --server -vlogDtprze.iLsfxCIvu . /root'));
  assert.ok(!isRsyncDaemonCommand('sh -c id'));
  assert.ok(!isRsyncDaemonCommand('rsync --server --daemon . ; id'));
  const conf = rsyncdConfig(42, 1234);
  assert.match(conf, /^use chroot = yes$/m);
  assert.match(conf, /^\[42\]$/m);
  assert.match(conf, /^path = \/proc\/1234\/root$/m);
  assert.match(conf, /^refuse options = devices copy-devices write-devices$/m);
  assert.match(conf, /^uid = 0$/m);
  // The client's own form of the instance is a module too (vast.py uses the id as typed: `C.42:/x` asks for `C.42`).
  assert.match(conf, /^\[C\.42\]$/m);
  assert.equal(conf.match(/^path = \/proc\/1234\/root$/gm)?.length, 2);
  assert.equal(conf.match(/^exclude = \/proc\/ \/sys\/ \/dev\/$/gm)?.length, 2);
  assert.throws(() => rsyncdConfig(42, 0));
});

test('port forwarding goes to the container only: localhost and its own address, nothing else', () => {
  const c = { id: 'x', running: true, pid: 1, ip: '172.30.0.2' };
  for (const d of ['localhost', '127.0.0.1', '127.0.0.53', '::1', '0.0.0.0', '172.30.0.2', 'LOCALHOST']) assert.equal(forwardTarget(d, c), '172.30.0.2', d);
  for (const d of ['172.30.0.1', '10.0.0.1', '169.254.169.254', 'example.com', '172.30.0.3']) assert.equal(forwardTarget(d, c), null, d);
  assert.equal(forwardTarget('localhost', { ...c, ip: null }), null);
});

test("ls -l's long name and touch's time", () => {
  const line = longName('notes.txt', { size: 1234, mode: 0o100640, uid: 0, gid: 0, atime: 0, mtime: Date.UTC(2026, 10, 28, 7, 5) / 1000 });
  assert.match(line, /^-rw-r-----\s+1 0\s+0\s+1234 Nov 28 07:05 notes\.txt$/);
  assert.match(longName('d', { size: 1, mode: 0o40755, uid: 0, gid: 0, atime: 0, mtime: 0 }), /^drwxr-xr-x /);
  assert.match(longName('l', { size: 1, mode: 0o120777, uid: 0, gid: 0, atime: 0, mtime: 0 }), /^lrwxrwxrwx /);
  assert.equal(touchTime(Date.UTC(2026, 0, 2, 3, 4, 5) / 1000), '202601020304.05');
});

test('the host key: made once per instance, 0600 in a 0700 folder, the same on every later read; another instance has another', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpuplane-hostkeys-'));
  try {
    const k1 = instanceHostKey(dir, 7);
    assert.match(k1, /BEGIN OPENSSH PRIVATE KEY/);
    assert.equal(statSync(hostKeyPath(dir, 7)).mode & 0o777, 0o600);
    assert.equal(statSync(join(dir, 'ssh-host-keys')).mode & 0o777, 0o700);
    assert.equal(instanceHostKey(dir, 7), k1);
    assert.equal(readFileSync(hostKeyPath(dir, 7), 'utf8'), k1);
    assert.notEqual(instanceHostKey(dir, 8), k1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("authorized_keys' text: one trimmed key a line", () => {
  assert.equal(authorizedKeysText([' ssh-ed25519 AAAA a@b ', 'ssh-rsa BBBB']), 'ssh-ed25519 AAAA a@b\nssh-rsa BBBB\n');
  assert.equal(authorizedKeysText([]), '');
});

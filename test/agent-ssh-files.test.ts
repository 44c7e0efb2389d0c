// Files in and out of a busybox container (no sftp-server, no scp, no rsync in it) through the agent's data plane
// (issue 31 items 3 and 6), with the real clients: sftp (put/get/ls/mkdir/rename/rm), scp both ways (OpenSSH 9's scp
// speaks SFTP), `rsync -a` both ways the way `vastai copy` runs it (`vastai_kaalia@ADDR::<id>/path` over ssh), the
// `rsync` target straight (the daemon on the stream), and a renter's symlinks to the host's paths: neither sftp nor
// rsync follows them out of the container. Docker and the clients must be there: without them this file fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Fixture, run, type Key } from './helpers/agent-ssh-fixture.js';

const fx = new Fixture();
const ID = 5100 + Math.floor(Math.random() * 1000);
let container = '';
let key: Key;
let port = 0;
/** A file on the host that no renter may read: its directory's path is what the container's symlinks name. */
let secretDir = '';

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

before(async () => {
  await fx.setup();
  key = await fx.key('renter');
  container = await fx.startInstance(ID, [key.publicKey]);
  port = (await fx.listen({ kind: 'ssh', instanceId: ID })).port;
  secretDir = join(fx.dir, 'host-secret');
  mkdirSync(secretDir);
  writeFileSync(join(secretDir, 'secret.txt'), 'host-only\n');
  // The renter's symlinks: to the host's secret's directory (absent in the container) and to /etc.
  await fx.exec(container, `mkdir -p /root/links && ln -s ${secretDir} /root/links/secret && ln -s /etc /root/links/etc && ln -s / /root/links/root`);
});

after(() => fx.teardown());

const sftpBatch = (batch: string) => run('sftp', ['-b', '-', ...fx.sshOptions(key, port).filter((a) => a !== '-p' && a !== String(port)), '-P', String(port), 'root@127.0.0.1'], { input: batch });

test('sftp: mkdir, put, ls, get, rename, rm, rmdir inside the container', async () => {
  const local = join(fx.dir, 'up.bin');
  const data = randomBytes(1_500_000);
  writeFileSync(local, data);
  const got = join(fx.dir, 'down.bin');
  const r = await sftpBatch([
    'mkdir /root/sftp-dir',
    `put ${local} /root/sftp-dir/file.bin`,
    'ls -l /root/sftp-dir',
    `get /root/sftp-dir/file.bin ${got}`,
    'rename /root/sftp-dir/file.bin /root/sftp-dir/moved.bin',
    'ls /root/sftp-dir',
    '',
  ].join('\n'));
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /-rw-r--r--\s+1 0\s+0\s+1500000 .* file\.bin/);
  assert.match(r.stdout, /moved\.bin/);
  assert.equal(sha(readFileSync(got)), sha(data));
  // The container holds the same bytes (read back with its own tools).
  assert.equal((await fx.exec(container, 'sha256sum /root/sftp-dir/moved.bin')).split(' ')[0], sha(data));

  const rm = await sftpBatch('rm /root/sftp-dir/moved.bin\nrmdir /root/sftp-dir\n');
  assert.equal(rm.code, 0, rm.stderr);
  assert.equal((await fx.exec(container, '[ -e /root/sftp-dir ] && echo there || echo gone')).trim(), 'gone');

  const missing = await sftpBatch(`get /root/no-such-file ${join(fx.dir, 'x')}\n`);
  assert.notEqual(missing.code, 0);
  assert.match(missing.stderr, /No such file|not found/i);
});

test('sftp lists a directory of many entries (answered in several READDIR replies), and ssh carries stdin whole', async () => {
  await fx.exec(container, 'mkdir -p /root/many && cd /root/many && i=0; while [ $i -lt 250 ]; do : > "f-$i"; i=$((i+1)); done');
  const r = await sftpBatch('ls -1 /root/many\n');
  assert.equal(r.code, 0, r.stderr);
  const names = r.stdout.split('\n').filter((l) => /^\/root\/many\/f-\d+$|^f-\d+$/.test(l.trim()));
  assert.equal(names.length, 250);
  const data = randomBytes(5_000_000);
  const sum = await run('ssh', [...fx.sshOptions(key, port), 'root@127.0.0.1', 'sha256sum'], { input: data });
  assert.equal(sum.code, 0, sum.stderr);
  assert.equal(sum.stdout.split(' ')[0], sha(data));
});

test('scp both ways (OpenSSH 9: over SFTP)', async () => {
  const local = join(fx.dir, 'scp-up.bin');
  const data = randomBytes(3_000_000);
  writeFileSync(local, data);
  const opts = fx.sshOptions(key, port).filter((a) => a !== '-p' && a !== String(port));
  const up = await run('scp', [...opts, '-P', String(port), local, 'root@127.0.0.1:/root/scp.bin']);
  assert.equal(up.code, 0, up.stderr);
  assert.equal((await fx.exec(container, 'sha256sum /root/scp.bin')).split(' ')[0], sha(data));
  const back = join(fx.dir, 'scp-down.bin');
  const down = await run('scp', [...opts, '-P', String(port), 'root@127.0.0.1:/root/scp.bin', back]);
  assert.equal(down.code, 0, down.stderr);
  assert.equal(sha(readFileSync(back)), sha(data));
});

test('rsync -a both ways as `vastai copy` runs it: vastai_kaalia@host::<instance id>/path over ssh, no rsync in the image', async () => {
  const src = join(fx.dir, 'tree');
  mkdirSync(join(src, 'sub'), { recursive: true });
  writeFileSync(join(src, 'a.txt'), 'alpha\n');
  writeFileSync(join(src, 'sub', 'b.bin'), randomBytes(200_000));
  const e = fx.rsyncShell(key, port);
  const up = await run('rsync', ['-arz', '-e', e, `${src}/`, `vastai_kaalia@127.0.0.1::${ID}/root/copied/`]);
  assert.equal(up.code, 0, up.stderr);
  assert.equal(await fx.exec(container, 'cat /root/copied/a.txt'), 'alpha\n');
  assert.equal((await fx.exec(container, 'sha256sum /root/copied/sub/b.bin')).split(' ')[0], sha(readFileSync(join(src, 'sub', 'b.bin'))));

  await fx.exec(container, 'echo made-inside > /root/copied/inside.txt');
  const dst = join(fx.dir, 'tree-back');
  const down = await run('rsync', ['-arz', '-e', e, `vastai_kaalia@127.0.0.1::${ID}/root/copied/`, `${dst}/`]);
  assert.equal(down.code, 0, down.stderr);
  assert.equal(readFileSync(join(dst, 'inside.txt'), 'utf8'), 'made-inside\n');
  assert.equal(sha(readFileSync(join(dst, 'sub', 'b.bin'))), sha(readFileSync(join(src, 'sub', 'b.bin'))));

  // A host process never reads a container's device nodes: the daemon refuses --copy-devices.
  const devices = await run('rsync', ['-a', '--copy-devices', '-e', e, `vastai_kaalia@127.0.0.1::${ID}/dev/null`, join(fx.dir, 'dev-null')]);
  assert.notEqual(devices.code, 0);
  assert.match(devices.stderr, /refused|not allowed|copy-devices/i);

  // The copy user gets the rsync daemon and nothing else.
  const shell = await fx.ssh(key, port, 'echo shell', { user: 'vastai_kaalia' });
  assert.notEqual(shell.code, 0);
  assert.doesNotMatch(shell.stdout, /shell/);
});

test('the rsync target: the daemon straight on the stream (rsync://)', async () => {
  const l = await fx.listen({ kind: 'rsync', instanceId: ID });
  await fx.exec(container, 'mkdir -p /root/direct && echo over-the-stream > /root/direct/f.txt');
  const dst = join(fx.dir, 'direct-back');
  const down = await run('rsync', ['-a', `rsync://127.0.0.1:${l.port}/${ID}/root/direct/`, `${dst}/`]);
  assert.equal(down.code, 0, down.stderr);
  assert.equal(readFileSync(join(dst, 'f.txt'), 'utf8'), 'over-the-stream\n');
  const up = await run('rsync', ['-a', `${dst}/`, `rsync://127.0.0.1:${l.port}/${ID}/root/direct-up/`]);
  assert.equal(up.code, 0, up.stderr);
  assert.equal(await fx.exec(container, 'cat /root/direct-up/f.txt'), 'over-the-stream\n');
});

test("a renter's symlinks to the host's paths lead nowhere out of the container, for sftp and for rsync", async () => {
  const got = join(fx.dir, 'stolen');
  for (const path of ['/root/links/secret/secret.txt', `/root/links/root${secretDir}/secret.txt`]) {
    const r = await sftpBatch(`get ${path} ${got}\n`);
    assert.notEqual(r.code, 0, `sftp read ${path}`);
    assert.ok(!existsSync(got));
    const rs = await run('rsync', ['-a', '-e', fx.rsyncShell(key, port), `vastai_kaalia@127.0.0.1::${ID}${path}`, got]);
    assert.notEqual(rs.code, 0, `rsync read ${path}`);
    assert.ok(!existsSync(got));
  }
  // Writing through them lands in the container (or fails), never in the host's directory.
  const local = join(fx.dir, 'plant.txt');
  writeFileSync(local, 'planted\n');
  await sftpBatch(`put ${local} /root/links/secret/planted.txt\n`);
  await run('rsync', ['-a', '-e', fx.rsyncShell(key, port), local, `vastai_kaalia@127.0.0.1::${ID}/root/links/secret/planted2.txt`]);
  assert.ok(!existsSync(join(secretDir, 'planted.txt')));
  assert.ok(!existsSync(join(secretDir, 'planted2.txt')));
  // The /etc link names the container's /etc: the host's passwd (root's line is in it) is not what comes back.
  const etc = await sftpBatch('ls /root/links/etc/\n');
  assert.equal(etc.code, 0, etc.stderr);
  assert.doesNotMatch(etc.stdout, /passwd|shadow|os-release|debian_version/);
  // A symlink copied back is a symlink still, not its target's contents.
  const dst = join(fx.dir, 'links-back');
  const back = await run('rsync', ['-a', '-e', fx.rsyncShell(key, port), `vastai_kaalia@127.0.0.1::${ID}/root/links/`, `${dst}/`]);
  assert.equal(back.code, 0, back.stderr);
  assert.equal(readlinkSync(join(dst, 'secret')), secretDir);
});

// Threat: a renter uses a copy between instances to reach beyond their own containers through the server, which runs
// the copy with its own rsync: reading the server's files through a symbolic link their container holds, making the
// server create special files (FIFOs, device nodes) from their container's, leaving data in the server's staging
// directory, or steering rsync with paths that look like options or carry control characters. Links arrive as links
// (never the server's file behind them), special files are not copied, the staging directory is gone once the copy
// ends (done or failed), and such paths are refused or stay paths.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forEachDialect } from './helpers/harness.js';
import { exitedAll, fakeTunnels, pairOnHosts } from './copy-fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'gpuplane-copy-security-'));
after(() => rmSync(root, { recursive: true, force: true }));
// This process's temporary directory is a fresh one (os.tmpdir() reads TMPDIR at each call, as the relay does), so
// the staging directories seen are this file's copies', not those of test files running beside it.
const tmp = join(root, 'tmp');
mkdirSync(tmp);
process.env.TMPDIR = tmp;
const staging = () => readdirSync(tmp).filter((n) => n.startsWith('gpuplane-copy-'));

forEachDialect('copy between instances: what a renter\'s container cannot make the server do', (app, dialect) => {
  const fsOf = (id: number) => join(root, dialect, `fs-${id}`);
  const put = (body: unknown, key: string) => app().request('PUT', '/api/v0/commands/copy_direct/', { key, body: { client_id: 'me', ...(body as object) } });
  const statusMsg = async (id: number, key: string) => (await app().request('GET', `/api/v0/instances/${id}/`, { key })).body.instances.status_msg;

  test('a link to a server file arrives as that link, never the file; a FIFO is not made; nothing stays in the staging directory', async () => {
    const fake = fakeTunnels(fsOf);
    app().services.copy.useTunnels(fake);
    const { key, a, b } = await pairOnHosts(app(), fsOf);
    assert.deepEqual(staging(), []);
    mkdirSync(join(fsOf(a), 'w'));
    writeFileSync(join(fsOf(a), 'w', 'f'), 'mine');
    symlinkSync('/etc/hostname', join(fsOf(a), 'w', 'host'));
    execFileSync('mkfifo', [join(fsOf(a), 'w', 'pipe')]);

    let waiting!: () => void;
    const atHost = new Promise<void>((r) => (waiting = r));
    let release!: () => void;
    fake.hold = { waiting, release: new Promise<void>((r) => (release = r)) };
    assert.equal((await put({ src_id: String(a), dst_id: String(b), src_path: '/w/', dst_path: '/got/' }, key)).status, 200);
    await atHost;
    assert.equal(staging().length, 1, 'the copy stages in this process\'s temporary directory');
    fake.hold = undefined;
    release();
    await app().services.copy.settled(b);
    assert.equal(await statusMsg(b, key), `copy from instance ${a}:/w/ to /got/: done`);
    assert.ok(lstatSync(join(fsOf(b), 'got', 'host')).isSymbolicLink(), 'the link is a link');
    // These test daemons run without chroot, so rsync strips the link's leading / as it writes it (the agent's chroot
    // daemons keep it); either way it is a link whose target is a name, not the server's file.
    assert.match(readlinkSync(join(fsOf(b), 'got', 'host')), /^\/?etc\/hostname$/);
    assert.equal(existsSync(join(fsOf(b), 'got', 'pipe')), false, 'no FIFO made');
    assert.deepEqual(staging(), [], 'the staging directory is removed');

    // A failed copy leaves nothing either.
    assert.equal((await put({ src_id: String(a), dst_id: String(b), src_path: '/missing/', dst_path: '/got2/' }, key)).status, 200);
    await app().services.copy.settled(b);
    assert.match(await statusMsg(b, key), /: failed: /);
    assert.deepEqual(staging(), []);
    await exitedAll(fake.daemons);
  });

  test('a path that looks like an option stays a path; control characters are refused', async () => {
    const fake = fakeTunnels(fsOf);
    app().services.copy.useTunnels(fake);
    const { key, a, b } = await pairOnHosts(app(), fsOf);
    mkdirSync(join(fsOf(a), '--delete'));
    writeFileSync(join(fsOf(a), '--delete', 'x'), 'x');
    writeFileSync(join(fsOf(b), 'keep'), 'keep');
    assert.equal((await put({ src_id: String(a), dst_id: String(b), src_path: '--delete', dst_path: '/' }, key)).status, 200);
    await app().services.copy.settled(b);
    assert.equal(await statusMsg(b, key), `copy from instance ${a}:--delete to /: done`);
    assert.ok(existsSync(join(fsOf(b), 'keep')), 'nothing was deleted');
    assert.ok(existsSync(join(fsOf(b), '--delete', 'x')), 'the directory of that name was copied');

    for (const [src_path, dst_path] of [['/w\n--delete', '/'], ['/w', '/x\u0000y'], ['/w', '/x\ry']]) {
      const res = await put({ src_id: String(a), dst_id: String(b), src_path, dst_path }, key);
      assert.equal(res.status, 400, res.raw);
      assert.match(res.body.msg, /must not hold control characters/);
    }
    await exitedAll(fake.daemons);
  });
});

// Copy between two instances (`vastai copy A:/path B:/path`, PUT /api/v0/commands/copy_direct/): the server's own
// rsync relays between the two instances' rsync daemons, each reached as the `rsync` target of a stream through its
// host's tunnel (tunnels-contract.ts). Here the tunnels are fake: each `open` spawns a real
// `rsync --server --daemon` on a pair of pipes, serving one directory per "instance" as the module named after it,
// so real rsync copies real files. Checked: files, directories, links and modes arrive; the streams go to each
// instance's own machine; progress and the outcome show in the destination's status_msg (done, failed saying why,
// canceled); one copy into an instance at a time; cancel stops the copy (here, and through the mark another server
// process would leave) and its rsync processes.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync, chmodSync, symlinkSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { copyStore } from '../src/copy/copy-store.js';
import { COPIES_PER_USER_MAX } from '../src/copy/copy-service.js';
import { desired, hostWithMachine, observed, report } from './agent-server-fixtures.js';
import { rentOk } from './instances-fixtures.js';
import { exitedAll, fakeTunnels, pairOnHosts, type FakeTunnels } from './copy-fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'gpuplane-copy-test-'));
after(() => rmSync(root, { recursive: true, force: true }));


forEachDialect('copy between instances', (app, dialect) => {
  /** The "container file system" of each fake instance (the ids of each database start at 1). */
  const fsOf = (id: number) => join(root, dialect, `fs-${id}`);
  const put = (body: unknown, key: string) => app().request('PUT', '/api/v0/commands/copy_direct/', { key, body: { client_id: 'me', ...(body as object) } });
  const statusMsg = async (id: number, key: string): Promise<string | null> => (await app().request('GET', `/api/v0/instances/${id}/`, { key })).body.instances.status_msg;

  const pair = () => pairOnHosts(app(), fsOf);

  function withTunnels(t: TestApp): FakeTunnels {
    const fake = fakeTunnels(fsOf);
    t.services.copy.useTunnels(fake);
    return fake;
  }

  test('files, directories, links and modes arrive through both hosts\' rsync streams; the destination\'s status says when it is done', async () => {
    const fake = withTunnels(app());
    const { key, a, b, machineA, machineB } = await pair();
    mkdirSync(join(fsOf(a), 'workspace', 'sub'), { recursive: true });
    writeFileSync(join(fsOf(a), 'workspace', 'model.bin'), Buffer.alloc(300_000, 7));
    writeFileSync(join(fsOf(a), 'workspace', 'sub', 'run.sh'), '#!/bin/sh\necho hi\n');
    chmodSync(join(fsOf(a), 'workspace', 'sub', 'run.sh'), 0o750);
    symlinkSync('sub/run.sh', join(fsOf(a), 'workspace', 'latest'));

    const res = await put({ src_id: String(a), dst_id: `C.${b}`, src_path: '/workspace/', dst_path: '/data/' }, key);
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body, {
      success: true, msg: `copy from instance ${a}:/workspace/ to instance ${b}:/data/ started; its progress shows in instance ${b}'s status_msg`,
    });
    await app().services.copy.settled(b);

    // A trailing / copies the directory's contents, as rsync (and so the client's own copies) read it.
    assert.deepEqual(readdirSync(join(fsOf(b), 'data')).sort(), ['latest', 'model.bin', 'sub']);
    assert.deepEqual(readFileSync(join(fsOf(b), 'data', 'model.bin')), Buffer.alloc(300_000, 7));
    assert.equal(readFileSync(join(fsOf(b), 'data', 'sub', 'run.sh'), 'utf8'), '#!/bin/sh\necho hi\n');
    assert.equal(statSync(join(fsOf(b), 'data', 'sub', 'run.sh')).mode & 0o777, 0o750);
    assert.equal(readlinkSync(join(fsOf(b), 'data', 'latest')), 'sub/run.sh');
    assert.equal(await statusMsg(b, key), `copy from instance ${a}:/workspace/ to /data/: done`);
    // Each stream went to its own instance's machine, as an rsync target.
    assert.deepEqual(fake.opened, [
      { machineId: machineA, target: { kind: 'rsync', instanceId: a } },
      { machineId: machineB, target: { kind: 'rsync', instanceId: b } },
    ]);
    await exitedAll(fake.daemons);

    // Without a trailing / the directory itself is copied, into the destination directory.
    const again = await put({ src_id: a, dst_id: String(b), src_path: '/workspace', dst_path: '/backup' }, key);
    assert.equal(again.status, 200, again.raw);
    await app().services.copy.settled(b);
    assert.deepEqual(readFileSync(join(fsOf(b), 'backup', 'workspace', 'model.bin')), Buffer.alloc(300_000, 7));

    // One file to a new name, in directories not there yet: they are made, and the file is that file, as rsync would
    // make it (not a directory of that name).
    const file = await put({ src_id: `C.${a}`, dst_id: `C.${b}`, src_path: '/workspace/sub/run.sh', dst_path: '/made/here/bin-copy.sh' }, key);
    assert.equal(file.status, 200, file.raw);
    await app().services.copy.settled(b);
    assert.equal(await statusMsg(b, key), `copy from instance ${a}:/workspace/sub/run.sh to /made/here/bin-copy.sh: done`);
    assert.equal(readFileSync(join(fsOf(b), 'made', 'here', 'bin-copy.sh'), 'utf8'), '#!/bin/sh\necho hi\n');
  });

  test('a failed copy says why in the destination\'s status: a missing source path, a host that refuses the stream', async () => {
    const fake = withTunnels(app());
    const { key, a, b, machineB } = await pair();
    const res = await put({ src_id: String(a), dst_id: String(b), src_path: '/nowhere/', dst_path: '/data/' }, key);
    assert.equal(res.status, 200, res.raw);
    await app().services.copy.settled(b);
    // The daemon's own line ("change_dir … failed") stays on its host: the reason is rsync's exit code.
    assert.equal(
      await statusMsg(b, key),
      `copy from instance ${a}:/nowhere/ to /data/: failed: reading the source failed: some files or directories could not be copied (rsync code 23): a path that does not exist, or one without permission to read or write it`,
    );
    assert.equal(existsSync(join(fsOf(b), 'data')), false);

    mkdirSync(join(fsOf(a), 'w'));
    writeFileSync(join(fsOf(a), 'w', 'f'), 'x');
    fake.refusing.add(machineB);
    assert.equal((await put({ src_id: String(a), dst_id: String(b), src_path: '/w/', dst_path: '/data/' }, key)).status, 200);
    await app().services.copy.settled(b);
    assert.equal(await statusMsg(b, key), `copy from instance ${a}:/w/ to /data/: failed: writing the destination failed: instance ${b}: the agent has no such container`);
    await exitedAll(fake.daemons);
  });

  test('one copy into an instance at a time; cancel stops it and its rsync, and nothing is written', async () => {
    const fake = withTunnels(app());
    const { key, a, b } = await pair();
    mkdirSync(join(fsOf(a), 'w'));
    writeFileSync(join(fsOf(a), 'w', 'f'), 'x');
    let waiting!: () => void;
    const atHost = new Promise<void>((r) => (waiting = r));
    let release!: () => void;
    fake.hold = { waiting, release: new Promise<void>((r) => (release = r)) };

    assert.equal((await put({ src_id: String(a), dst_id: String(b), src_path: '/w/', dst_path: '/data/' }, key)).status, 200);
    // The copy's rsync has connected and waits for the source's host.
    await atHost;
    const second = await put({ src_id: String(a), dst_id: String(b), src_path: '/w/', dst_path: '/other/' }, key);
    assert.equal(second.status, 409, second.raw);
    assert.equal(second.body.msg, `a copy into instance ${b} is running; wait for it, or stop it first (vastai cancel copy ${b})`);

    // As typed after `vastai cancel copy`, whose help names DST "instance_id:/path".
    const cancel = await app().request('DELETE', '/api/v0/commands/copy_direct/', { key, body: { client_id: 'me', dst_id: `C.${b}:/data/` } });
    assert.equal(cancel.status, 200, cancel.raw);
    assert.deepEqual(cancel.body, { success: true, msg: `the copy into instance ${b} is canceled` });
    assert.equal(await statusMsg(b, key), `copy from instance ${a}:/w/ to /data/: canceled`);
    // The host answers at last: its stream is dropped at once, its daemon ends.
    fake.hold = undefined;
    release();
    await new Promise<void>((r) => {
      const check = () => (fake.daemons.length === 1 ? r() : setImmediate(check));
      check();
    });
    await exitedAll(fake.daemons);
    assert.equal(existsSync(join(fsOf(b), 'data')), false);
    await app().services.copy.settled(b);
  });

  test('an account runs at most COPIES_PER_USER_MAX copies between instances at once: the next is 429 until one ends', async () => {
    const fake = withTunnels(app());
    const renter = await app().createUser({ credit: 100 });
    const ids: number[] = [];
    for (let h = 0; h < 3; h++) {
      const host = await hostWithMachine(app());
      for (let i = 0; i < 2; i++) {
        const { id } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox' }, renter.api_key);
        ids.push(id);
      }
      const d = await desired(app(), host);
      await report(app(), host, d.instances.map((x: any) => observed(x.instance_id, x.boot)), d.version);
    }
    for (const id of ids) mkdirSync(fsOf(id), { recursive: true });
    const [a, ...dsts] = ids;
    let release!: () => void;
    fake.hold = { waiting: () => undefined, release: new Promise<void>((r) => (release = r)) };
    for (const b of dsts.slice(0, COPIES_PER_USER_MAX)) {
      assert.equal((await put({ src_id: String(a), dst_id: String(b), src_path: '/', dst_path: '/in/' }, renter.api_key)).status, 200);
    }
    const over = await put({ src_id: String(a), dst_id: String(dsts[COPIES_PER_USER_MAX]), src_path: '/', dst_path: '/in/' }, renter.api_key);
    assert.equal(over.status, 429, over.raw);
    assert.equal(over.body.error, 'rate_limited');
    assert.equal(over.body.msg, `this account runs ${COPIES_PER_USER_MAX} copies between instances, the most this server allows at once; wait for one to end`);
    const cancel = await app().request('DELETE', '/api/v0/commands/copy_direct/', { key: renter.api_key, body: { client_id: 'me', dst_id: String(dsts[0]) } });
    assert.equal(cancel.status, 200, cancel.raw);
    assert.equal((await put({ src_id: String(a), dst_id: String(dsts[COPIES_PER_USER_MAX]), src_path: '/', dst_path: '/in/' }, renter.api_key)).status, 200);
    for (const b of dsts) {
      await app().request('DELETE', '/api/v0/commands/copy_direct/', { key: renter.api_key, body: { client_id: 'me', dst_id: String(b) } });
    }
    fake.hold = undefined;
    release();
    await app().services.copy.settled();
    await exitedAll(fake.daemons);
  });

  test('a cancel asked through another server process (its mark in the database) stops the copy here', async () => {
    const fake = withTunnels(app());
    const { key, a, b } = await pair();
    mkdirSync(join(fsOf(a), 'w'));
    writeFileSync(join(fsOf(a), 'w', 'f'), 'x');
    let waiting!: () => void;
    const atHost = new Promise<void>((r) => (waiting = r));
    let release!: () => void;
    fake.hold = { waiting, release: new Promise<void>((r) => (release = r)) };
    assert.equal((await put({ src_id: String(a), dst_id: String(b), src_path: '/w/', dst_path: '/data/' }, key)).status, 200);
    await atHost;
    // What DELETE does in a process that does not run the copy.
    await copyStore(app().store.db).markCancel(b, app().clock.now());
    await app().services.copy.settled(b);
    assert.equal(await statusMsg(b, key), `copy from instance ${a}:/w/ to /data/: canceled`);
    assert.equal(await copyStore(app().store.db).cancelMark(b), undefined, 'the mark is cleared by the process that heeded it');
    fake.hold = undefined;
    release();
    await exitedAll(fake.daemons);
    assert.equal(existsSync(join(fsOf(b), 'data')), false);
  });
});

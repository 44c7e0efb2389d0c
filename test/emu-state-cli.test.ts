// Issue 34 (state): `gpuplane emu save FILE` and `gpuplane emu restore FILE` (the CLI run in the test's process) against
// real servers started by the server's own start-up code, and `--emu-state FILE` (GPUPLANE_EMU_STATE): a server that
// starts from the saved world.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '../src/sdk/client.js';
import { OWNER_KEY, runCli, startServer, T0, tempConfigHome, type ServerProcess } from './cli-helpers.js';

describe('gpuplane emu save / restore, and a server started from the file', () => {
  const servers: ServerProcess[] = [];
  let dir: string;
  let home: ReturnType<typeof tempConfigHome>;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'emu-state-cli-'));
    home = tempConfigHome();
  });
  after(async () => {
    for (const s of servers) await s.close();
    rmSync(dir, { recursive: true, force: true });
    home.cleanup();
  });
  const cli = (srv: ServerProcess, args: string[], key = OWNER_KEY) =>
    runCli(args, { GPUPLANE_URL: srv.url, GPUPLANE_API_KEY: key, XDG_CONFIG_HOME: home.dir });
  const start = async (extra: string[] = []) => {
    const s = await startServer(extra);
    servers.push(s);
    return s;
  };

  test('save to a file, restore into a fresh server, start a third from the file: the same user, key and clock', async () => {
    const a = await start();
    const owner = createClient({ url: a.url, apiKey: OWNER_KEY });
    const { user, api_key } = await owner.emulator.createUser({ email: 'cli-state@example.com', credit: 12 });
    await owner.emulator.advance(5000);
    const file = join(dir, 'world.json');

    const saved = await cli(a, ['emu', 'save', file]);
    assert.equal(saved.code, 0, saved.stderr);
    assert.match(saved.stdout, /^saved \d+ rows of \d+ tables to .*world\.json/);
    assert.equal(statSync(file).mode & 0o777, 0o600, 'the file holds secrets: readable by its owner only');
    const doc = JSON.parse(readFileSync(file, 'utf8'));
    assert.equal(doc.format, 'gpuplane-emulator-state');
    assert.equal(doc.clock.now, T0 + 5000);

    const raw = await cli(a, ['emu', 'save', '-']);
    assert.equal(raw.code, 0, raw.stderr);
    assert.equal(JSON.parse(raw.stdout).format, 'gpuplane-emulator-state');

    const b = await start(['--clock-start', String(T0 + 90 * 86400)]);
    const restored = await cli(b, ['emu', 'restore', file, '--raw']);
    assert.equal(restored.code, 0, restored.stderr);
    assert.deepEqual(JSON.parse(restored.stdout).clock, { kind: 'virtual', now: T0 + 5000 });
    const c = await start(['--emu-state', file]);

    for (const srv of [a, b, c]) {
      const me = await createClient({ url: srv.url, apiKey: api_key }).account.currentUser();
      assert.equal(me.id, user.id);
      assert.equal(me.credit, 12);
      assert.equal((await createClient({ url: srv.url, apiKey: OWNER_KEY }).emulator.clock()).now, T0 + 5000);
    }
  });

  test('restore: a file that is not a saved state is refused, naming what is wrong', async () => {
    const srv = servers[0];
    const notJson = join(dir, 'not.json');
    writeFileSync(notJson, 'hello');
    const r1 = await cli(srv, ['emu', 'restore', notJson]);
    assert.equal(r1.code, 2);
    assert.match(r1.stderr, /is not JSON/);
    const wrong = join(dir, 'wrong.json');
    writeFileSync(wrong, JSON.stringify({ format: 'other', version: 1, rows: {} }));
    const r2 = await cli(srv, ['emu', 'restore', wrong]);
    assert.equal(r2.code, 1);
    assert.match(r2.stderr, /body\.format/);
    const r3 = await cli(srv, ['emu', 'restore', join(dir, 'missing.json')]);
    assert.equal(r3.code, 2);
    assert.match(r3.stderr, /cannot read/);
  });
});

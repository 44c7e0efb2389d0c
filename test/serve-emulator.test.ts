// Issue 34 item 6: `gpuplane serve --emulator`, the one line a CI job starts the emulator with: a free port, an
// in-memory database, logs on stderr, and `GPUPLANE_URL=…` alone on stdout once the seed file and the init scripts
// are done (/readyz 503 until then). Real processes, as `npx gpuplane serve --emulator` runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const BIN = join(import.meta.dirname, '..', 'bin', 'gpuplane.mjs');
const WAIT_MS = 60_000;
const KEY = 'ci-seeded-key-0123456789abcdef';
const OWNER = 'ci-owner-key-0123456789abcdef';

interface Proc {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
}

function start(args: string[], env: Record<string, string> = {}, cwd?: string): Proc {
  const base = { ...process.env };
  // The shorthand's defaults apply only where neither a flag nor the environment names the port or the database.
  delete base.GPUPLANE_PORT;
  delete base.GPUPLANE_DATABASE_URL;
  delete base.GPUPLANE_MODE;
  const child = spawn(process.execPath, [BIN, 'serve', '--emulator', ...args], {
    env: { ...base, GPUPLANE_GATEWAY: 'false', GPUPLANE_LOG_LEVEL: 'info', GPUPLANE_LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd,
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

async function until<T>(what: string, p: Proc, probe: () => T | undefined): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (p.child.exitCode !== null) throw new Error(`exited (${p.child.exitCode}) before ${what}:\n${p.stdout()}\n${p.stderr()}`);
    if (Date.now() > deadline) throw new Error(`no ${what} within ${WAIT_MS} ms:\n${p.stdout()}\n${p.stderr()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function stop(p: Proc): Promise<number | null> {
  if (p.child.exitCode === null) p.child.kill('SIGTERM');
  return p.exited;
}

test('serve --emulator: listens on a free port, /readyz 503 while the init scripts run, then prints GPUPLANE_URL alone on stdout', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'serve-emu-'));
  const initDir = join(dir, 'init');
  mkdirSync(initDir);
  const gate = join(dir, 'gate');
  const seed = join(dir, 'seed.json');
  writeFileSync(seed, JSON.stringify({ fleet: 'none', users: [{ email: 'ci@example.com', credit: 42, api_keys: [{ key: KEY }] }], machines: [{ gpu_name: 'RTX 4090', count: 2 }] }));
  writeFileSync(join(initDir, '10-wait'), `#!/bin/sh\nwhile [ ! -e ${gate} ]; do sleep 0.05; done\necho "$GPUPLANE_API_KEY" > ${join(dir, 'key-seen')}\n`);
  chmodSync(join(initDir, '10-wait'), 0o755);
  // Relative paths, from the working directory, as a CI job gives them.
  const p = start(['--emu-seed-file', 'seed.json', '--emu-init-dir', 'init'], { GPUPLANE_BOOTSTRAP_API_KEY: OWNER }, dir);
  try {
    // The listening line is on stderr, with the port chosen.
    const port = await until('the listening line', p, () => /"port":(\d+)[^\n]*"msg":"gpuplane listening on /.exec(p.stderr())?.[1]);
    assert.notEqual(port, '8080');
    const url = `http://127.0.0.1:${port}`;
    const held = await fetch(`${url}/readyz`);
    assert.equal(held.status, 503);
    assert.equal((await held.json()).error, 'service_unavailable');
    assert.equal(p.stdout(), '', 'nothing on stdout before ready');
    // The seed was applied before listening.
    const me = await fetch(`${url}/api/v0/users/current/`, { headers: { authorization: `Bearer ${KEY}` } });
    assert.equal(me.status, 200);
    assert.equal((await me.json()).credit, 42);

    writeFileSync(gate, '');
    const line = await until('the URL line', p, () => (p.stdout().includes('\n') ? p.stdout() : undefined));
    assert.equal(line, `GPUPLANE_URL=${url}\n`);
    const ready = await fetch(`${url}/readyz`);
    assert.equal(ready.status, 200);
    const body = await ready.json();
    assert.equal(body.database, 'sqlite');
    assert.deepEqual(body.emulator_init, { scripts: 1, failed: [] });
    // The script ran with the owner's bootstrap key; the key is never printed.
    assert.equal(readFileSync(join(dir, 'key-seen'), 'utf8'), `${OWNER}\n`);
    assert.ok(!p.stderr().includes(OWNER) && !p.stdout().includes(OWNER));
    const offers = await fetch(`${url}/api/v0/bundles/`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: '{"limit": 100}' });
    assert.deepEqual([...new Set((await offers.json()).offers.map((o: any) => o.machine_id))].length, 2);
    assert.equal(await stop(p), 0);
  } finally {
    writeFileSync(gate, '');
    await stop(p);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('serve --emulator with nothing to seed: the URL line at once; an in-memory database (nothing written to ./data)', async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'serve-emu-'));
  const p = start([], { GPUPLANE_BOOTSTRAP_API_KEY: OWNER }, cwd);
  try {
    const line = await until('the URL line', p, () => (p.stdout().includes('\n') ? p.stdout() : undefined));
    const m = /^GPUPLANE_URL=(http:\/\/127\.0\.0\.1:(\d+))\n$/.exec(line);
    assert.ok(m, line);
    const ready = await fetch(`${m[1]}/readyz`);
    assert.equal(ready.status, 200);
    assert.equal((await ready.json()).emulator_init, undefined);
    // The owner's key works against the emulator control API.
    const clock = await fetch(`${m[1]}/_emu/clock`, { headers: { authorization: `Bearer ${OWNER}` } });
    assert.equal(clock.status, 200);
    assert.equal(await stop(p), 0);
    assert.deepEqual(readdirSync(cwd), []);
  } finally {
    await stop(p);
    rmSync(cwd, { recursive: true, force: true });
  }
});

test('serve --emulator with a bad seed file: exit 2, the file and the field named on stderr, no URL line', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'serve-emu-'));
  const seed = join(dir, 'seed.json');
  writeFileSync(seed, JSON.stringify({ users: [{ email: 'ci@example.com', api_keys: [{ key: 'too-short' }] }] }));
  const p = start(['--emu-seed-file', seed], { GPUPLANE_BOOTSTRAP_API_KEY: OWNER });
  try {
    assert.equal(await p.exited, 2, p.stderr());
    assert.match(p.stderr(), new RegExp(`gpuplane: configuration error: GPUPLANE_EMU_SEED_FILE \\(--emu-seed-file\\) ${seed.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: users\\[0\\]\\.api_keys\\[0\\]\\.key: must be 16 to 512`));
    assert.ok(!p.stderr().includes('too-short'), 'the secret is not echoed');
    assert.equal(p.stdout(), '');
  } finally {
    await stop(p);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('serve --emulator with an init folder that does not exist: exit 2, named', async () => {
  const p = start(['--emu-init-dir', '/nonexistent/init.d'], { GPUPLANE_BOOTSTRAP_API_KEY: OWNER });
  assert.equal(await p.exited, 2, p.stderr());
  assert.match(p.stderr(), /gpuplane: configuration error: GPUPLANE_EMU_INIT_DIR \(--emu-init-dir\) \/nonexistent\/init\.d: not a folder/);
  assert.equal(p.stdout(), '');
});

test('serve --emulator --mode production: a configuration error (exit 2)', async () => {
  const p = start(['--mode', 'production']);
  assert.equal(await p.exited, 2);
  assert.match(p.stderr(), /--emulator runs emulator mode; it cannot be combined with --mode production/);
});

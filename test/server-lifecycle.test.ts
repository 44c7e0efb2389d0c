// Starting and stopping a real server process (issue 11 §8, §10, §11): signals stop it (also through `npm start`),
// shutdown ends open streams and waits and exits 0; a taken port fails the start before the owner key is made or
// printed; a bootstrap key that cannot act is named in a warning; `gpuplane admin create-key` replaces a lost owner
// key; a database that cannot be opened is named, without its password, in one line, exit 1.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { T0 } from './helpers/harness.js';
import { call, serve } from './helpers/spawn.js';

const ROOT = join(import.meta.dirname, '..');
const BIN = join(ROOT, 'bin', 'gpuplane.mjs');
const KEY = 'gpk_lifecycle_owner_key_0123456789';
const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gpuplane-lifecycle-'));
  dirs.push(d);
  return d;
}
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Runs `gpuplane ARGS` to its end: exit code, stdout, stderr. */
function run(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [BIN, ...args], { env: { ...process.env, GPUPLANE_LOG_LEVEL: 'info', ...env }, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** True when something accepts connections on the port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('stopping', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    test(`${signal} to \`npm start\` stops the server process, not only npm`, async () => {
      const dir = tempDir();
      const npm = spawn('npm', ['start', '--silent', '--', '--port', '0', '--database-url', `sqlite:${join(dir, 'g.db')}`], {
        cwd: ROOT,
        env: { ...process.env, GPUPLANE_LOG_LEVEL: 'info', GPUPLANE_BOOTSTRAP_API_KEY: KEY, GPUPLANE_SIM_MACHINES: '3', GPUPLANE_LOG_FORMAT: 'json' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
      const { port, pid } = await new Promise<{ port: number; pid: number }>((resolve, reject) => {
        npm.stdout!.on('data', (c: Buffer) => {
          out += c.toString();
          const line = out.split('\n').find((l) => l.includes('"msg":"gpuplane listening'));
          if (line) {
            const j = JSON.parse(line);
            resolve({ port: j.port, pid: j.pid });
          }
        });
        npm.stderr!.on('data', (c: Buffer) => (out += c.toString()));
        npm.once('exit', () => reject(new Error(`npm start exited before listening:\n${out}`)));
      });
      assert.notEqual(pid, npm.pid, 'the server line names the server process');
      assert.equal(await listening(port), true);
      npm.kill(signal);
      const code = await exited;
      assert.equal(code, 0, out);
      assert.equal(alive(pid), false, `the server process ${pid} outlived npm`);
      assert.equal(await listening(port), false);
    });
  }

  test('Ctrl-C under `npm start` (SIGINT to the whole process group, and npm forwarding its own) is a clean stop', async () => {
    const dir = tempDir();
    // Its own process group, as a terminal's foreground job: the group gets the signal, as from Ctrl-C.
    const npm = spawn('npm', ['start', '--silent', '--', '--port', '0', '--database-url', `sqlite:${join(dir, 'g.db')}`], {
      cwd: ROOT,
      detached: true,
      env: { ...process.env, GPUPLANE_LOG_LEVEL: 'info', GPUPLANE_BOOTSTRAP_API_KEY: KEY, GPUPLANE_SIM_MACHINES: '3', GPUPLANE_LOG_FORMAT: 'json' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
    const pid = await new Promise<number>((resolve, reject) => {
      npm.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        const line = out.split('\n').find((l) => l.includes('"msg":"gpuplane listening'));
        if (line) resolve(JSON.parse(line).pid);
      });
      npm.stderr!.on('data', (c: Buffer) => (out += c.toString()));
      npm.once('exit', () => reject(new Error(`npm start exited before listening:\n${out}`)));
    });
    process.kill(-npm.pid!, 'SIGINT');
    assert.equal(await exited, 0, out);
    assert.doesNotMatch(out, /again: exiting now/);
    assert.equal(alive(pid), false);
  });

  test('shutdown ends open event streams and waits, finishes, and exits 0 (well before a long deadline)', async () => {
    const dir = tempDir();
    // A deadline far beyond the test's own timeout: only ending the stream and the wait lets the process exit in time.
    const s = await serve({
      GPUPLANE_DATABASE_URL: `sqlite:${join(dir, 'g.db')}`, GPUPLANE_BOOTSTRAP_API_KEY: KEY, GPUPLANE_CLOCK: 'virtual',
      GPUPLANE_CLOCK_START: String(T0), GPUPLANE_SIM_MACHINES: '3', GPUPLANE_SHUTDOWN_TIMEOUT: '3600',
    });
    const offers = await call(s.url, 'POST', '/api/v0/bundles/', KEY, { limit: 1 });
    const rented = await call(s.url, 'PUT', `/api/v0/asks/${offers.body.offers[0].id}/`, KEY, { image: 'busybox' });
    assert.equal(rented.status, 200, JSON.stringify(rented.body));
    const stream = await fetch(`${s.url}/api/v0/instances/events/`, { headers: { authorization: `Bearer ${KEY}` } });
    const reader = stream.body!.getReader();
    await reader.read(); // the stream's first comment: it is open
    const waiting = call(s.url, 'GET', `/api/v0/instances/${rented.body.new_contract}/wait/?until=running&timeout=600`, KEY);
    s.child.kill('SIGTERM');
    // Ended by the shutdown, or refused by it if it arrived late: a 503 either way, never a hang
    // (instances-events-stream.test.ts shows a wait already parked being ended).
    const waited = await waiting;
    assert.equal(waited.status, 503);
    assert.equal(waited.body.error, 'service_unavailable');
    for (;;) if ((await reader.read()).done) break;
    await new Promise<void>((resolve) => (s.child.exitCode !== null ? resolve() : s.child.once('exit', () => resolve())));
    assert.equal(s.child.exitCode, 0, s.output());
  });
});

describe('the owner key', () => {
  test('a taken port fails the start before the owner exists: no key printed, one line naming the address, exit 1', async () => {
    const dir = tempDir();
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', () => r()));
    const port = (holder.address() as { port: number }).port;
    try {
      const env = { GPUPLANE_DATABASE_URL: `sqlite:${join(dir, 'g.db')}`, GPUPLANE_SIM_MACHINES: '3' };
      const r = run(['serve', '--port', String(port)], env);
      assert.equal(r.code, 1, r.stdout + r.stderr);
      assert.doesNotMatch(r.stdout, /shown only this once/);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port} .*already in use`));
    } finally {
      holder.close();
    }
    // The owner was never created: the next start on a free port creates it and prints its key.
    const s = await serve({ GPUPLANE_DATABASE_URL: `sqlite:${join(dir, 'g.db')}`, GPUPLANE_SIM_MACHINES: '3' });
    try {
      const key = /shown only this once:\s+(\S+)/.exec(s.output())?.[1];
      assert.ok(key, s.output());
      assert.equal((await call(s.url, 'GET', '/api/v0/users/current', key!)).status, 200);
    } finally {
      await s.stop();
    }
  });

  test('clients connecting while it starts (agents retrying through a restart) do not hold the start-up: it listens', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    // Connections opened and kept open, without a request, every few milliseconds until the server answers.
    const held: ReturnType<typeof connect>[] = [];
    let knocking = true;
    const knock = (async () => {
      while (knocking) {
        const c = connect(port, '127.0.0.1');
        c.on('error', () => undefined);
        held.push(c);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    try {
      const dir = tempDir();
      const server = await serve({ GPUPLANE_DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}`, GPUPLANE_BOOTSTRAP_API_KEY: KEY }, { port });
      knocking = false;
      await knock;
      assert.equal((await call(server.url, 'GET', '/api/v0/users/current', KEY)).status, 200);
      await server.stop();
    } finally {
      knocking = false;
      for (const c of held) c.destroy();
    }
  });

  test('GPUPLANE_BOOTSTRAP_API_KEY on a database that has users warns, naming it, unless it is a live key', async () => {
    const dir = tempDir();
    const env = { GPUPLANE_DATABASE_URL: `sqlite:${join(dir, 'g.db')}`, GPUPLANE_SIM_MACHINES: '3' };
    await (await serve({ ...env, GPUPLANE_BOOTSTRAP_API_KEY: KEY })).stop();
    const same = await serve({ ...env, GPUPLANE_BOOTSTRAP_API_KEY: KEY });
    await same.stop();
    assert.doesNotMatch(same.output(), /GPUPLANE_BOOTSTRAP_API_KEY is set but ignored/);
    const other = await serve({ ...env, GPUPLANE_BOOTSTRAP_API_KEY: 'gpk_some_other_key_0123456789' });
    try {
      assert.match(other.output(), /"level":40[^\n]*GPUPLANE_BOOTSTRAP_API_KEY is set but ignored/);
      assert.equal((await call(other.url, 'GET', '/api/v0/users/current', 'gpk_some_other_key_0123456789')).status, 401);
    } finally {
      await other.stop();
    }
  });

  test('`gpuplane admin create-key` makes a new admin key on the server\'s database; none without an admin', async () => {
    const dir = tempDir();
    const url = `sqlite:${join(dir, 'g.db')}`;
    const empty = run(['admin', 'create-key', '--database-url', url]);
    assert.equal(empty.code, 1);
    assert.match(empty.stderr, /has no admin account/);

    await (await serve({ GPUPLANE_DATABASE_URL: url, GPUPLANE_SIM_MACHINES: '3' })).stop(); // the owner, whose key is "lost"
    const made = run(['admin', 'create-key', '--name', 'recovered'], { GPUPLANE_DATABASE_URL: url });
    assert.equal(made.code, 0, made.stderr);
    const key = /shown only this once:\s+(\S+)/.exec(made.stdout)?.[1];
    assert.ok(key, made.stdout);
    const s = await serve({ GPUPLANE_DATABASE_URL: url, GPUPLANE_SIM_MACHINES: '3' });
    try {
      const me = await call(s.url, 'GET', '/api/v0/users/current', key!);
      assert.equal(me.status, 200);
      assert.equal(me.body.is_admin, true);
      assert.equal(me.body.email, 'owner@gpuplane.local');
      const keys = await call(s.url, 'GET', '/api/v0/auth/apikeys/', key!);
      assert.ok(JSON.stringify(keys.body).includes('"recovered"'));
      // It stands in for the lost owner key, so the emulator's reset keeps it as it keeps the bootstrap key.
      assert.equal((await call(s.url, 'POST', '/_emu/reset', key!)).status, 200);
      assert.equal((await call(s.url, 'GET', '/api/v0/users/current', key!)).status, 200);
    } finally {
      await s.stop();
    }
    assert.equal(run(['admin', 'create-key', '--bogus'], { GPUPLANE_DATABASE_URL: url }).code, 2);
  });
});

describe('a database that cannot be opened', () => {
  const cases: [string, string, RegExp][] = [
    ['a refused port', 'postgres://gp:hunter2secret@127.0.0.1:1/test', /^gpuplane: cannot open the database postgres:\/\/gp@127\.0\.0\.1:1\/test \(GPUPLANE_DATABASE_URL\): connect ECONNREFUSED 127\.0\.0\.1:1$/],
    ['an unknown host', 'postgres://gp:hunter2secret@no-such-host.invalid/test', /^gpuplane: cannot open the database postgres:\/\/gp@no-such-host\.invalid\/test \(GPUPLANE_DATABASE_URL\): getaddrinfo ENOTFOUND no-such-host\.invalid$/],
    // libpq's query-string form of the password is hidden too.
    ['a password in the query string', 'postgres://gp@127.0.0.1:1/test?password=hunter2secret&sslmode=disable', /^gpuplane: cannot open the database postgres:\/\/gp@127\.0\.0\.1:1\/test\?sslmode=disable \(GPUPLANE_DATABASE_URL\): connect ECONNREFUSED 127\.0\.0\.1:1$/],
  ];
  for (const [what, url, expected] of cases) {
    test(`${what}: one line naming it without the password and the variable, exit 1`, () => {
      const r = run(['serve', '--port', '0'], { GPUPLANE_DATABASE_URL: url });
      assert.equal(r.code, 1);
      assert.match(r.stderr.trim(), expected);
      assert.doesNotMatch(r.stdout + r.stderr, /hunter2secret/);
    });
  }

  test('an SQLite file that cannot be opened: one line, exit 1', () => {
    const dir = tempDir(); // a directory is not a database file
    const r = run(['serve', '--port', '0'], { GPUPLANE_DATABASE_URL: `sqlite:${dir}` });
    assert.equal(r.code, 1);
    assert.equal(r.stderr.trim(), `gpuplane: cannot open the database sqlite:${dir} (GPUPLANE_DATABASE_URL): unable to open database file`);
  });
});

// What a new user meets first, the CLI run in the test's process against a real server (virtual clock): --version, a --url with the
// API's prefix, the password of `login` (asked on a terminal without echo, or read from standard input, never
// needed on the command line), and a wait on a virtual clock that says why it timed out and how to move the clock.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from '../src/sdk/client.js';
import { serverUrl } from '../src/cli/context.js';
import { promptHidden, PromptCancelled, type PasswordIO } from '../src/cli/password.js';
import { EventsHub, instanceEventsFactory } from '../src/instances/instances-events.js';
import { ApiError } from '../src/platform/errors.js';
import { WaitTimeoutError } from '../src/sdk/errors.js';
import { BIN, instanceSteps, OWNER_KEY, ROOT, runCli, tempConfigHome, useServer } from './cli-helpers.js';

const server = useServer();
const cli = server.cli;
const sdk = () => createClient({ url: server.url(), apiKey: OWNER_KEY });
const OFFLINE = { GPUPLANE_URL: 'http://127.0.0.1:1' };
let n = 0;
const email = (what: string) => `cli-usability-${what}-${process.pid}-${n++}@example.com`;
const PASSWORD = 'correct horse battery';

describe('--version and --url', () => {
  test('--version (and -V) prints the package version and exits 0', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    for (const flag of ['--version', '-V']) {
      const r = await runCli([flag]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, `${version}\n`);
    }
  });

  test('a --url or GPUPLANE_URL ending in the API prefix /api/v0 (with or without a slash) is the same server', async () => {
    for (const suffix of ['/api/v0', '/api/v0/', '/']) {
      const r = await cli(['--url', `${server.url()}${suffix}`, 'show', 'user', '--raw']);
      assert.equal(r.code, 0, `${suffix}: ${r.stderr}`);
      assert.equal(JSON.parse(r.stdout).email, 'owner@gpuplane.local');
    }
    const env = await cli(['show', 'user', '--raw'], { GPUPLANE_URL: `${server.url()}/api/v0/` });
    assert.equal(env.code, 0, env.stderr);
    assert.equal(serverUrl('https://gp.example.com/base/api/v0//'), 'https://gp.example.com/base');
    assert.equal(serverUrl('http://h:8080/api/v01'), 'http://h:8080/api/v01', 'only the prefix itself');
  });
});

describe('the password of login and create account', () => {
  test('--password-stdin reads it from standard input (one final newline dropped); nothing on the command line', async () => {
    const addr = email('stdin');
    await sdk().emulator.createUser({ email: addr, password: PASSWORD });
    const own = tempConfigHome();
    try {
      const env = { XDG_CONFIG_HOME: own.dir, GPUPLANE_API_KEY: undefined };
      const r = await cli(['login', '--username', addr, '--password-stdin'], env, undefined, `${PASSWORD}\n`);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /session key saved to/);
      assert.equal(r.stderr, '', 'no warning');
      const me = await cli(['show', 'user', '--raw'], env);
      assert.equal(JSON.parse(me.stdout).email, addr, 'the saved session works');
      const wrong = await cli(['login', '--username', addr, '--password-stdin'], env, undefined, 'not it\n');
      assert.equal(wrong.code, 1, 'the password read is the one sent');
    } finally {
      own.cleanup();
    }
  });

  test('create account --password-stdin', async () => {
    const addr = email('signup');
    const r = await cli(['create', 'account', '--email', addr, '--password-stdin', '--raw'], { GPUPLANE_API_KEY: undefined }, undefined, `${PASSWORD}\n`);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).user.email, addr);
  });

  test('without a terminal or --password-stdin there is no password: a usage error, nothing sent', async () => {
    for (const args of [['login', '--username', 'a@b.c'], ['create', 'account', '--email', 'a@b.c']]) {
      const r = await cli(args, OFFLINE);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /--password-stdin/);
    }
    const both = await cli(['login', '--username', 'a@b.c', '--password', 'x', '--password-stdin'], OFFLINE, undefined, 'x\n');
    assert.equal(both.code, 2);
    const empty = await cli(['login', '--username', 'a@b.c', '--password-stdin'], OFFLINE, undefined, '\n');
    assert.equal(empty.code, 2);
    assert.match(empty.stderr, /empty/);
  });

  test('--password still works, with a warning that it is unsafe', async () => {
    const addr = email('arg');
    await sdk().emulator.createUser({ email: addr, password: PASSWORD });
    const own = tempConfigHome();
    try {
      const r = await cli(['login', '--username', addr, '--password', PASSWORD], { XDG_CONFIG_HOME: own.dir, GPUPLANE_API_KEY: undefined });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /^warning: .*shell history.*--password-stdin/);
    } finally {
      own.cleanup();
    }
  });

  test('on a terminal, login asks for the password without echoing it (a pseudo-terminal through script)', async () => {
    const addr = email('tty');
    await sdk().emulator.createUser({ email: addr, password: PASSWORD });
    const own = tempConfigHome();
    try {
      const env: Record<string, string> = {};
      for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('GPUPLANE_')) env[k] = v;
      Object.assign(env, { GPUPLANE_URL: server.url(), XDG_CONFIG_HOME: own.dir });
      const line = [process.execPath, BIN, 'login', '--username', addr].map((w) => `'${w}'`).join(' ');
      // script(1) from util-linux runs the command on a new pseudo-terminal and relays our pipe to it.
      const proc = spawn('script', ['-qfec', line, '/dev/null'], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      let typed = false;
      proc.stdout.on('data', (d) => {
        out += String(d);
        if (!typed && out.includes('Password: ')) {
          typed = true;
          proc.stdin.write(`${PASSWORD}\r`);
        }
      });
      const code = await new Promise<number | null>((done) => proc.on('close', done));
      assert.equal(code, 0, out);
      assert.ok(typed, 'it asked');
      assert.match(out, /logged in as /);
      assert.ok(!out.includes(PASSWORD), 'the password was not echoed');
      assert.ok(existsSync(join(own.dir, 'gpuplane', 'api_key')), 'the session key is saved');
    } finally {
      own.cleanup();
    }
  });

  /** A terminal's input: raw mode switched by setRawMode, keys arriving as data. */
  function fakeTerminal() {
    const input = Object.assign(new EventEmitter(), {
      isTTY: true,
      isRaw: false,
      rawModes: [] as boolean[],
      setRawMode(raw: boolean) {
        this.isRaw = raw;
        this.rawModes.push(raw);
      },
      setEncoding() {},
      resume() {},
      pause() {},
    });
    let shown = '';
    const io = { input, output: { write: (t: string) => (shown += t) } } as unknown as PasswordIO;
    return { input, io, shown: () => shown };
  }

  test('the prompt: raw mode (no echo) before the question, editing keys, and the terminal restored after', async () => {
    const t = fakeTerminal();
    const answer = promptHidden('Password: ', t.io);
    assert.deepEqual(t.input.rawModes, [true], 'echo is off before anything is typed');
    assert.equal(t.shown(), 'Password: ');
    t.input.emit('data', 'wrong\u0015'); // Ctrl-U clears the line
    t.input.emit('data', 'pass\u001b[D'); // an arrow key is ignored
    t.input.emit('data', 'wx\u007fo'); // Backspace
    t.input.emit('data', 'rd\rignored');
    assert.equal(await answer, 'password');
    assert.deepEqual(t.input.rawModes, [true, false], 'raw mode is switched off again');
    assert.equal(t.shown(), 'Password: \n', 'nothing typed is shown');

    const c = fakeTerminal();
    const cancelled = promptHidden('Password: ', c.io);
    c.input.emit('data', 'abc\u0003');
    await assert.rejects(cancelled, PromptCancelled);
    assert.deepEqual(c.input.rawModes, [true, false]);
  });
});

describe('a wait on a virtual clock', () => {
  const steps = instanceSteps(server);

  test('times out saying the clock is virtual and how to advance it; the hinted command then lets it finish', async () => {
    const id = await steps.instance();
    const r = await cli(['wait', 'instance', String(id), '--timeout', '1']);
    assert.equal(r.code, 4, r.stderr);
    assert.match(r.stderr, /the service clock is virtual: it moves only when advanced/);
    const hinted = /`gpuplane (emu advance) SECONDS`/.exec(r.stderr);
    assert.ok(hinted, `the hint names the command: ${r.stderr}`);
    // Boots take at most 20 s of service time (GPUPLANE_SIM_BOOT_SECONDS 5-20).
    const advance = await cli([...hinted[1].split(' '), '60']);
    assert.equal(advance.code, 0, advance.stderr);
    const done = await cli(['wait', 'instance', String(id), '--timeout', '30']);
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, new RegExp(`instance ${id} is running`));
  });

  test('the server says it too: the 408 of GET /instances/{id}/wait/, and the event stream names the clock', async () => {
    const id = await steps.instance();
    const res = await fetch(`${server.url()}/api/v0/instances/${id}/wait/?timeout=0.2`, { headers: { authorization: `Bearer ${OWNER_KEY}` } });
    assert.equal(res.status, 408);
    const body = await res.json();
    assert.equal(body.error, 'wait_timeout');
    assert.match(body.msg, /the service clock is virtual: it moves only when advanced, with POST \/_emu\/clock\/advance/);
    const stream = await fetch(`${server.url()}/api/v0/instances/events/?timeout=0.2`, { headers: { authorization: `Bearer ${OWNER_KEY}` } });
    assert.equal(stream.headers.get('x-gpuplane-clock'), 'virtual');
    await stream.text();
  });
});

describe('a wait on a real clock', () => {
  test('its timeouts (server 408, SDK) say nothing about the clock', async () => {
    const store = { findInScope: async () => ({ actual_status: 'loading', status_msg: null }) };
    for (const kind of ['real', 'virtual'] as const) {
      const events = instanceEventsFactory({ store: store as never, hub: new EventsHub(), clock: { kind } });
      await assert.rejects(events.wait({} as never, 7, 'running', 0.01), (err: unknown) => {
        assert.ok(err instanceof ApiError && err.code === 'wait_timeout');
        assert.equal(/virtual/.test(err.message), kind === 'virtual', err.message);
        return true;
      });
    }
    assert.doesNotMatch(new WaitTimeoutError(7, 'loading', 5, 'real').msg, /virtual/);
    assert.doesNotMatch(new WaitTimeoutError(7, 'loading', 5).msg, /virtual/);
    assert.match(new WaitTimeoutError(7, 'loading', 5, 'virtual').msg, /virtual/);
  });
});

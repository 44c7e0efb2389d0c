// The agent's own SSH server (src/agent/ssh/, issue 31 item 3) into a busybox container (no sshd, no scp, no rsync),
// with the real OpenSSH client: connections from a loopback listener go straight into the data plane's handle(), as a
// tunnel stream would. Exec with its exit status and stdin, a PTY and its size, ssh -L to a port in the container, keys
// checked at each login (an attached key works, a detached one is refused and its open session ended), one host key
// per instance kept across data plane restarts, authorized_keys rewritten for an image's own sshd, the `tcp` target,
// refusals. Docker and OpenSSH must be there: without them this file fails, it never skips.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import ssh2 from 'ssh2';
import { Fixture, run, type Key } from './helpers/agent-ssh-fixture.js';
import { hostKeyPath } from '../src/agent/ssh/host-keys.js';
import { StreamRefusal } from '../src/agent/agent-data-plane.js';

const fx = new Fixture();
const ID = 3100 + Math.floor(Math.random() * 1000);
let container = '';
let alice: Key;
let bob: Key;
let port = 0;

/** Until something listens on the container's `port` (busybox's httpd binds after it has gone to the background). */
async function listening(c: string, p: number): Promise<void> {
  while ((await fx.exec(c, `netstat -ltn | grep -c ":${p} " || true`)).trim() === '0') await new Promise((r) => setTimeout(r, 50));
}

before(async () => {
  await fx.setup();
  alice = await fx.key('alice');
  bob = await fx.key('bob');
  container = await fx.startInstance(ID, [alice.publicKey]);
  // A web server inside the container, on its own network only (nothing is published).
  await fx.exec(container, 'mkdir -p /www && echo served-from-the-container > /www/index.html && httpd -p 8080 -h /www');
  await listening(container, 8080);
  port = (await fx.listen({ kind: 'ssh', instanceId: ID })).port;
});

after(() => fx.teardown());

test('exec: output, stderr and the exit status come back; stdin reaches the command and its end is seen', async () => {
  const r = await fx.ssh(alice, port, 'echo hi; echo oops >&2; exit 3');
  assert.equal(r.code, 3, r.stderr);
  assert.equal(r.stdout, 'hi\n');
  assert.equal(r.stderr, 'oops\n');
  const input = 'line one\nline two\n';
  const w = await fx.ssh(alice, port, 'cat > /tmp/in 2>/dev/null || cat > /in; wc -c < /in 2>/dev/null || wc -c < /tmp/in', { input });
  assert.equal(w.code, 0, w.stderr);
  assert.equal(w.stdout.trim(), String(input.length));
  // The session is root's, in root's home when there is one, without the container's own variables.
  const who = await fx.ssh(alice, port, 'id -u; echo "$HOME"; echo "${CONTAINER_ID:-unset}"; echo "$SSH_CLIENT"');
  const lines = who.stdout.split('\n');
  assert.deepEqual(lines.slice(0, 3), ['0', '/root', 'unset']);
  assert.match(lines[3], /^127\.0\.0\.1 \d+ 22$/);
});

test("a session's process ends with its connection (a TTY shell and a command), as sshd hangs them up", async () => {
  const ps = () => fx.exec(container, 'ps -o args');
  const shell = spawn('ssh', [...fx.sshOptions(alice, port), '-tt', 'root@127.0.0.1', 'exec sh -c "echo shell-up; exec sleep 4242"'], { stdio: ['pipe', 'pipe', 'ignore'] });
  const command = spawn('ssh', [...fx.sshOptions(alice, port), 'root@127.0.0.1', 'echo command-up; sleep 4343'], { stdio: ['pipe', 'pipe', 'ignore'] });
  const up = (c: ReturnType<typeof spawn>, text: string) => new Promise<void>((resolve) => {
    let seen = '';
    c.stdout!.on('data', (d) => {
      seen += String(d);
      if (seen.includes(text)) resolve();
    });
  });
  await Promise.all([up(shell, 'shell-up'), up(command, 'command-up')]);
  assert.match(await ps(), /sleep 4242[\s\S]*sleep 4343|sleep 4343[\s\S]*sleep 4242/);
  shell.kill('SIGKILL');
  command.kill('SIGKILL');
  // Until both are gone (the agent sees each connection end, then signals its process).
  for (let i = 0; i < 600 && /sleep 4242|sleep 4343/.test(await ps()); i++) await new Promise((r) => setTimeout(r, 100));
  assert.doesNotMatch(await ps(), /sleep 4242|sleep 4343/);
});

test('/etc/environment\'s variables are in sessions (what `env >> /etc/environment` in onstart does)', async () => {
  await fx.exec(container, 'echo "GREETING=hello from onstart" >> /etc/environment');
  const r = await fx.ssh(alice, port, 'echo "$GREETING"');
  assert.equal(r.stdout, 'hello from onstart\n');
});

test("the session's shell is root's login shell from /etc/passwd, /bin/sh without one", async () => {
  assert.equal((await fx.ssh(alice, port, 'echo "$SHELL"')).stdout, '/bin/sh\n');
  await fx.exec(container, 'echo "root:x:0:0:root:/root:/bin/ash" > /etc/passwd');
  try {
    const r = await fx.ssh(alice, port, 'echo "$SHELL"; echo "$0"');
    assert.equal(r.stdout, '/bin/ash\n/bin/ash\n');
  } finally {
    await fx.exec(container, 'rm /etc/passwd');
  }
});

test('ssh -tt gets a PTY, and the exit status', async () => {
  const r = await fx.ssh(alice, port, 'tty; exit 7', { extra: ['-tt'] });
  assert.equal(r.code, 7, r.stderr);
  assert.match(r.stdout, /^\/dev\/pts\/\d+\r\n$/);
});

test('a PTY has the size asked for, and follows a window change', async () => {
  const client = new ssh2.Client();
  await new Promise<void>((resolve, reject) => {
    client.once('ready', () => resolve()).once('error', reject);
    client.connect({ host: '127.0.0.1', port, username: 'root', privateKey: readFileSync(alice.file) });
  });
  try {
    const out = await new Promise<string>((resolve, reject) => {
      client.shell({ rows: 33, cols: 111, term: 'xterm' }, (err, ch) => {
        if (err) return reject(err);
        let seen = '';
        let resized = false;
        ch.on('data', (d: Buffer) => {
          seen += d.toString();
          if (!resized && /33 111/.test(seen)) {
            resized = true;
            ch.setWindow(44, 132, 0, 0);
            // The shell reads the next line after the resize was sent: SSH keeps a channel's messages in order.
            ch.write('stty size; exit\n');
          }
        });
        ch.on('close', () => resolve(seen));
        ch.write('stty size\n');
      });
    });
    assert.match(out, /33 111/);
    assert.match(out, /44 132/);
  } finally {
    client.end();
  }
});

test('ssh -L reaches a port served inside the container; other destinations are refused', async () => {
  const local = await new Promise<number>((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  const child = spawn('ssh', [...fx.sshOptions(alice, port), '-N', '-o', 'ExitOnForwardFailure=yes', '-L', `127.0.0.1:${local}:localhost:8080`, 'root@127.0.0.1'], { stdio: 'ignore' });
  try {
    // Until the forward is up (ssh listens once authenticated), then one request through it.
    let body = '';
    for (let i = 0; i < 100 && !body.includes('served-from-the-container'); i++) {
      body = await new Promise<string>((resolve) => {
        const s = connect(local, '127.0.0.1');
        let got = '';
        s.on('connect', () => s.write('GET /index.html HTTP/1.0\r\n\r\n'));
        s.on('data', (d) => (got += String(d)));
        s.on('error', () => resolve(''));
        s.on('close', () => resolve(got));
      });
      if (!body.includes('served-from-the-container')) await new Promise((r) => setTimeout(r, 100));
    }
    assert.match(body, /served-from-the-container/);
  } finally {
    child.kill();
  }
  // ssh -W uses the same direct-tcpip channel. A service bound to the container's loopback alone is reached too.
  await fx.exec(container, 'httpd -p 127.0.0.1:8082 -h /www');
  await listening(container, 8082);
  const inside = await fx.ssh(alice, port, '', { extra: ['-W', 'localhost:8082'], input: 'GET /index.html HTTP/1.0\r\n\r\n' });
  assert.match(inside.stdout, /served-from-the-container/, inside.stderr);
  // An address other than the container's is refused.
  const r = await fx.ssh(alice, port, '', { extra: ['-W', '192.0.2.1:80'] });
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /open failed|prohibited|refused|forwarding failed/i);
});

test('keys: a key not listed is refused; one added is accepted without a restart; one removed is refused and its open session ended', async () => {
  const before = await fx.ssh(bob, port, 'echo in');
  assert.equal(before.code, 255);
  assert.match(before.stderr, /Permission denied/);

  fx.instances.set(ID, { sshKeys: [alice.publicKey, bob.publicKey], runtype: 'ssh' });
  const added = await fx.ssh(bob, port, 'echo in');
  assert.equal(added.code, 0, added.stderr);
  assert.equal(added.stdout, 'in\n');

  // An open session of bob's, then bob's key is detached.
  const open = fx.ssh(bob, port, 'echo started; sleep 600');
  const waitStarted = async () => {
    for (;;) {
      const r = await fx.exec(container, 'ps | grep -c "[s]leep 600" || true');
      if (Number(r.trim()) > 0) return;
      await new Promise((res) => setTimeout(res, 100));
    }
  };
  await waitStarted();
  fx.instances.set(ID, { sshKeys: [alice.publicKey], runtype: 'ssh' });
  await fx.dataPlane.keysChanged();
  const ended = await open;
  assert.notEqual(ended.code, 0);
  const after = await fx.ssh(bob, port, 'echo in');
  assert.equal(after.code, 255);
  assert.match(after.stderr, /Permission denied/);
  assert.equal((await fx.ssh(alice, port, 'echo still')).stdout, 'still\n');
});

test('one host key per instance, in the state dir (0600), the same after the data plane restarts', async () => {
  const kh = join(fx.dir, 'known_hosts_stable');
  const first = await fx.ssh(alice, port, 'true', { knownHosts: kh, strict: 'accept-new' });
  assert.equal(first.code, 0, first.stderr);
  const file = hostKeyPath(fx.stateDir, ID);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  fx.dataPlane.close();
  fx.startDataPlane();
  const again = await fx.ssh(alice, port, 'echo same', { knownHosts: kh, strict: 'yes' });
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, 'same\n');
  // Another instance has another key: the known_hosts entry of this one does not fit it.
  const other = ID + 5000;
  await fx.startInstance(other, [alice.publicKey]);
  const otherPort = (await fx.listen({ kind: 'agent-ssh', instanceId: other })).port;
  const mismatch = await run('ssh', [...fx.sshOptions(alice, otherPort, kh, 'yes'), '-o', 'HostKeyAlias=[127.0.0.1]:' + port, 'root@127.0.0.1', 'true']);
  assert.equal(mismatch.code, 255);
  assert.match(mismatch.stderr, /HOST IDENTIFICATION HAS CHANGED|Host key verification failed/);
});

test('the trailers say who logged in, or that authentication failed; no key is ever logged', async () => {
  const l = await fx.listen({ kind: 'agent-ssh', instanceId: ID });
  await fx.ssh(alice, l.port, 'true');
  await fx.ssh(bob, l.port, 'true');
  for (let i = 0; i < 200 && l.ends.length < 2; i++) await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(l.ends[0], { endpoint: 'agent', auth: 'ok', user: 'root' });
  assert.deepEqual(l.ends[1], { endpoint: 'agent', auth: 'failed' });
  const logged = fx.log.lines.join('\n');
  for (const k of [alice, bob]) assert.ok(!logged.includes(k.publicKey.split(' ')[1]), 'a key in the log');
  assert.match(logged, /ssh session ended.*"instance_id":\d+.*"user":"root"/);
});

test('through an HTTP/2 stream as the tunnel carries it (closed only after its trailers): a session, a refused login, a port, and their trailers', async () => {
  const l = await fx.listenHttp2({ kind: 'ssh', instanceId: ID });
  const r = await fx.ssh(alice, l.port, 'echo via-http2; exit 4');
  assert.equal(r.code, 4, r.stderr);
  assert.equal(r.stdout, 'via-http2\n');
  const refused = await fx.ssh(bob, l.port, 'true');
  assert.equal(refused.code, 255);
  for (let i = 0; i < 200 && l.ends.length < 2; i++) await new Promise((res) => setTimeout(res, 50));
  assert.deepEqual(l.ends, [{ endpoint: 'agent', auth: 'ok', user: 'root' }, { endpoint: 'agent', auth: 'failed' }]);
  const tcp = await fx.listenHttp2({ kind: 'tcp', instanceId: ID, port: 8080 });
  const body = await new Promise<string>((resolve, reject) => {
    const s = connect(tcp.port, '127.0.0.1');
    let got = '';
    s.on('connect', () => s.write('GET /index.html HTTP/1.0\r\n\r\n'));
    s.on('data', (d) => (got += String(d)));
    s.on('error', reject);
    s.on('close', () => resolve(got));
  });
  assert.match(body, /served-from-the-container/);
  for (let i = 0; i < 200 && tcp.ends.length < 1; i++) await new Promise((res) => setTimeout(res, 50));
  assert.deepEqual(tcp.ends, [{ endpoint: 'tcp' }]);
});

test('authorized_keys follows the keys in a running SSH container (for an image with its own sshd)', async () => {
  const read = () => fx.exec(container, 'cat /root/.ssh/authorized_keys');
  assert.equal(await read(), `${alice.publicKey}\n`);
  fx.instances.set(ID, { sshKeys: [alice.publicKey, bob.publicKey], runtype: 'ssh' });
  await fx.dataPlane.keysChanged();
  assert.equal(await read(), `${alice.publicKey}\n${bob.publicKey}\n`);
  assert.equal((await fx.exec(container, 'stat -c %a /root/.ssh/authorized_keys')).trim(), '600');
  fx.instances.set(ID, { sshKeys: [bob.publicKey], runtype: 'ssh' });
  await fx.dataPlane.keysChanged();
  assert.equal(await read(), `${bob.publicKey}\n`);
  fx.instances.set(ID, { sshKeys: [alice.publicKey], runtype: 'ssh' });
  await fx.dataPlane.keysChanged();
  assert.equal(await read(), `${alice.publicKey}\n`);
});

test('tcp target: bytes spliced to a container port; a closed port and a foreign instance are refused', async () => {
  const l = await fx.listen({ kind: 'tcp', instanceId: ID, port: 8080 });
  const body = await new Promise<string>((resolve, reject) => {
    const s = connect(l.port, '127.0.0.1');
    let got = '';
    s.on('connect', () => s.write('GET /index.html HTTP/1.0\r\n\r\n'));
    s.on('data', (d) => (got += String(d)));
    s.on('error', reject);
    s.on('close', () => resolve(got));
  });
  assert.match(body, /served-from-the-container/);

  const closed = await fx.listen({ kind: 'tcp', instanceId: ID, port: 8081 });
  const foreign = await fx.listen({ kind: 'ssh', instanceId: ID + 100_000 });
  for (const l2 of [closed, foreign]) {
    await new Promise<void>((resolve) => {
      const s = connect(l2.port, '127.0.0.1');
      s.on('error', () => undefined);
      s.on('close', () => resolve());
    });
  }
  assert.ok(closed.refusals[0] instanceof StreamRefusal);
  assert.equal((closed.refusals[0] as StreamRefusal).status, 502);
  assert.match(closed.refusals[0].message, /port 8081 of instance \d+ is not open/);
  assert.equal((foreign.refusals[0] as StreamRefusal).status, 404);
});

test("ssh target: an image's own sshd on port 22 gets the stream as it is; a stopped container is refused", async () => {
  const other = ID + 7000;
  const c2 = await fx.startInstance(other, [alice.publicKey]);
  // An image with an sshd (busybox has none: an `sshd` on the PATH says it has, and its httpd on port 22 stands in for
  // it): the stream goes to port 22, untouched. Whether the image has one is asked of the container, not guessed from
  // a port that may still be closed while sshd starts.
  await fx.exec(c2, 'printf "#!/bin/sh\\n" > /bin/sshd && chmod +x /bin/sshd && mkdir -p /www && echo port-22-of-the-image > /www/index.html && httpd -p 22 -h /www');
  await listening(c2, 22);
  const l = await fx.listen({ kind: 'ssh', instanceId: other });
  const body = await new Promise<string>((resolve, reject) => {
    const s = connect(l.port, '127.0.0.1');
    let got = '';
    s.on('connect', () => s.write('GET /index.html HTTP/1.0\r\n\r\n'));
    s.on('data', (d) => (got += String(d)));
    s.on('error', reject);
    s.on('close', () => resolve(got));
  });
  assert.match(body, /port-22-of-the-image/);
  for (let i = 0; i < 200 && l.ends.length < 1; i++) await new Promise((res) => setTimeout(res, 50));
  assert.deepEqual(l.ends, [{ endpoint: 'image-sshd' }]);

  await fx.docker.getContainer(c2).stop({ t: 1 });
  await new Promise<void>((resolve) => {
    const s = connect(l.port, '127.0.0.1');
    s.on('error', () => undefined);
    s.on('close', () => resolve());
  });
  assert.equal((l.refusals[0] as StreamRefusal).status, 502);
  assert.match(l.refusals[0].message, /instance \d+ is not running/);
});

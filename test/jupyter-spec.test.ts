// How a Jupyter instance's container is made (issue 32), pure and with real shells: JUPYTER_TOKEN as a placement fact
// (a renter's variable of that name does not replace it), the entrypoint's Jupyter lines (notebook or lab, port 8080
// on all addresses, no browser, as root, the directory: default /root, a relative one from /), run by the host's
// /bin/sh and by busybox's sh with a stand-in `jupyter` that records what it was given: a directory with spaces,
// quotes, $(...) and backticks reaches Jupyter as text and runs nothing; without a `jupyter` the log says so. And the
// agent's probe: a running Jupyter container whose image lacks Jupyter is reported once asked, others are not asked.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  buildContainerSpec, JUPYTER_DIR_DEFAULT, JUPYTER_MISSING_LOG, jupyterArgv, jupyterLines, jupyterStart, keepAliveScript, type MachineLimits,
} from '../src/agent/container-spec.js';
import { createJupyterProbe, JUPYTER_PROBE_ARGV } from '../src/agent/jupyter-probe.js';
import type { ObservedInstanceT } from '../src/protocol/agent-protocol-schemas.js';
import { silentLog } from '../src/agent/agent-log.js';
import { desiredInstance } from './agent-fake-server.js';

const M: MachineLimits = { machineId: 42, owner: '0123456789abcdef', cpuCores: 8, ramMb: 16 * 1024, gpuDevices: false, publicIp: '203.0.113.7' };
const TOKEN = 'tok_0123456789abcdefABCDEF-_xyz';
const ARGV_TAIL = ['--ip=0.0.0.0', '--port=8080', '--no-browser', '--allow-root'];

/** A stand-in `jupyter` that writes its argv (a line each), JUPYTER_TOKEN and working directory to $RECORD. */
const STAND_IN = [
  '#!/bin/sh',
  ': > "$RECORD"',
  'for a in "$@"; do printf \'arg=%s\\n\' "$a" >> "$RECORD"; done',
  'printf \'token=%s\\n\' "$JUPYTER_TOKEN" >> "$RECORD"',
  'printf \'pwd=%s\\n\' "$(pwd)" >> "$RECORD"',
].join('\n');

describe('the Jupyter container spec', () => {
  test('jupyterStart: notebook unless use_jupyter_lab; /root unless jupyter_dir; a relative directory from /; none for other runtypes', () => {
    assert.deepEqual(jupyterStart({ runtype: 'jupyter' }), { lab: false, dir: JUPYTER_DIR_DEFAULT });
    assert.equal(JUPYTER_DIR_DEFAULT, '/root');
    assert.deepEqual(jupyterStart({ runtype: 'jupyter', use_jupyter_lab: true, jupyter_dir: '/workspace' }), { lab: true, dir: '/workspace' });
    assert.deepEqual(jupyterStart({ runtype: 'jupyter', jupyter_dir: 'data/nb' }), { lab: false, dir: '/data/nb' });
    assert.deepEqual(jupyterStart({ runtype: 'jupyter', jupyter_dir: '' }), { lab: false, dir: '/root' });
    assert.equal(jupyterStart({ runtype: 'ssh', use_jupyter_lab: true, jupyter_dir: '/x' }), null);
    assert.equal(jupyterStart({ runtype: 'args' }), null);
    assert.deepEqual(jupyterArgv({ lab: false, dir: '/root' }), ['jupyter', 'notebook', ...ARGV_TAIL, '--notebook-dir=/root']);
    assert.deepEqual(jupyterArgv({ lab: true, dir: '/a b' }), ['jupyter', 'lab', ...ARGV_TAIL, '--notebook-dir=/a b']);
  });

  test('JUPYTER_TOKEN is the instance\'s token, over a renter\'s variable of that name; an SSH runtype keeps the renter\'s', () => {
    const d = desiredInstance({ instance_id: 9, runtype: 'jupyter', ports: ['8080/tcp', '22/tcp'], env: { JUPYTER_TOKEN: 'mine', A: '1' }, jupyter_token: TOKEN });
    const s = buildContainerSpec(d, M, { '8080/tcp': 40002, '22/tcp': 40001 }, '127.0.0.1');
    assert.deepEqual(s.env.filter((e) => e.startsWith('JUPYTER_TOKEN=')), [`JUPYTER_TOKEN=${TOKEN}`]);
    assert.ok(s.env.includes('A=1'));
    assert.deepEqual(Object.keys(s.ports), ['8080/tcp'], '8080 published by Docker, 22 held by the agent');
    const script = s.entrypoint![2];
    assert.ok(script.includes(`exec 'jupyter' 'notebook' '--ip=0.0.0.0' '--port=8080' '--no-browser' '--allow-root' '--notebook-dir=/root'`), script);
    assert.ok(!script.includes(TOKEN), 'the token is not in the script (nor in any argument)');
    assert.ok(!s.entrypoint!.some((a) => a.includes(TOKEN)));
    // Onstart still runs, after Jupyter is started; sshd before it.
    const withOnstart = buildContainerSpec({ ...d, onstart: 'echo hi' }, M, { '8080/tcp': 40002, '22/tcp': 40001 }, '127.0.0.1').entrypoint![2];
    assert.ok(withOnstart.indexOf('sshd') < withOnstart.indexOf('jupyter'));
    assert.ok(withOnstart.indexOf('jupyter') < withOnstart.indexOf('sh /root/onstart.sh'));
    // An SSH instance starts no Jupyter and keeps a renter's JUPYTER_TOKEN (a stray token field changes nothing).
    const ssh = buildContainerSpec(desiredInstance({ instance_id: 9, runtype: 'ssh', env: { JUPYTER_TOKEN: 'mine' }, jupyter_token: TOKEN }), M, {}, '127.0.0.1');
    assert.deepEqual(ssh.env.filter((e) => e.startsWith('JUPYTER_TOKEN=')), ['JUPYTER_TOKEN=mine']);
    assert.ok(!ssh.entrypoint![2].includes('jupyter'));
    assert.equal(keepAliveScript([], null), keepAliveScript([], null, null));
    // An instance from before the token (none sent): no JUPYTER_TOKEN made up; Jupyter makes its own.
    const old = buildContainerSpec(desiredInstance({ instance_id: 9, runtype: 'jupyter' }), M, {}, '127.0.0.1');
    assert.ok(!old.env.some((e) => e.startsWith('JUPYTER_TOKEN=')));
    assert.ok(old.entrypoint![2].includes("'jupyter' 'notebook'"));
  });
});

/** Shells to run the entrypoint's lines with: the host's sh, and busybox's (the test image's). Both must be there. */
const SHELLS: [string, string[]][] = [['/bin/sh', []], ['/bin/busybox', ['sh']]];

describe('the entrypoint\'s Jupyter lines, run', () => {
  for (const [shell, pre] of SHELLS) {
    test(`${shell} ${pre.join(' ')}: a directory with spaces, quotes, $(...) and backticks reaches Jupyter as text and runs nothing`, () => {
      assert.ok(existsSync(shell), `${shell} is needed by this test`);
      const tmp = mkdtempSync(join(tmpdir(), 'gpuplane-jupyter-spec-'));
      try {
        const bin = join(tmp, 'bin');
        mkdirSync(bin);
        writeFileSync(join(bin, 'jupyter'), STAND_IN);
        chmodSync(join(bin, 'jupyter'), 0o755);
        const dir = `${tmp}/work space/it's "q" $(touch ${tmp}/pwned1) \`touch ${tmp}/pwned2\` $HOME;touch ${tmp}/pwned3 & | *`;
        for (const lab of [false, true]) {
          const record = join(tmp, `record-${lab}`);
          const script = `${jupyterLines({ lab, dir }).join('\n')}\nwait`;
          const r = spawnSync(shell, [...pre, '-c', script], { env: { PATH: `${bin}:/usr/bin:/bin`, RECORD: record, JUPYTER_TOKEN: TOKEN, HOME: '/nonexistent' }, encoding: 'utf8' });
          assert.equal(r.status, 0, r.stderr);
          assert.equal(r.stderr, '');
          assert.deepEqual(readFileSync(record, 'utf8').split('\n').filter(Boolean), [
            ...['jupyter', lab ? 'lab' : 'notebook', ...ARGV_TAIL, `--notebook-dir=${dir}`].slice(1).map((a) => `arg=${a}`),
            `token=${TOKEN}`,
            `pwd=${dir}`,
          ]);
        }
        for (const n of [1, 2, 3]) assert.ok(!existsSync(join(tmp, `pwned${n}`)), `pwned${n}: the directory's text ran`);
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    });

    test(`${shell} ${pre.join(' ')}: without a jupyter on PATH the log says so and the entrypoint goes on`, () => {
      const script = `${jupyterLines({ lab: false, dir: '/root' }).join('\n')}\necho went-on`;
      const r = spawnSync(shell, [...pre, '-c', script], { env: { PATH: '/nonexistent' }, encoding: 'utf8' });
      assert.equal(r.status, 0);
      assert.equal(r.stdout, 'went-on\n');
      assert.equal(r.stderr, `${JUPYTER_MISSING_LOG}\n`);
    });
  }
});

describe('the agent\'s Jupyter probe', () => {
  const run = (id: number, container: string, over: Partial<ObservedInstanceT> = {}): ObservedInstanceT => ({
    instance_id: id, generation: 1, boot: 1, state: 'running', container_id: container, exit_code: null, ports: {}, error: null, ...over,
  });
  const desired = [desiredInstance({ instance_id: 1, runtype: 'jupyter' }), desiredInstance({ instance_id: 2, runtype: 'jupyter' }), desiredInstance({ instance_id: 3, runtype: 'ssh' })];

  test('asks each running Jupyter container once with the entrypoint\'s test; reports jupyter_missing where it failed', async () => {
    const asked: { id: string; argv: string[] }[] = [];
    let missingCalls = 0;
    const probe = createJupyterProbe({
      runtime: { exec: async (id, argv) => (asked.push({ id, argv }), { output: '', exitCode: id === 'c1' ? 1 : 0, timedOut: false }) },
      log: silentLog,
      onMissing: () => missingCalls++,
    });
    const observed = [run(1, 'c1'), run(2, 'c2'), run(3, 'c3'), run(4, 'c4', { state: 'pulling', container_id: null })];
    const first = probe.annotate(observed, desired);
    assert.deepEqual(first, observed, 'nothing known before the answers');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(asked.map((a) => a.id).sort(), ['c1', 'c2'], 'only running Jupyter containers are asked');
    assert.deepEqual(asked[0].argv, [...JUPYTER_PROBE_ARGV]);
    assert.equal(missingCalls, 1);
    const second = probe.annotate(observed, desired);
    assert.equal(second[0].jupyter_missing, true);
    assert.equal(second[1].jupyter_missing, undefined);
    assert.equal(second[2].jupyter_missing, undefined);
    probe.annotate(observed, desired);
    await new Promise((r) => setImmediate(r));
    assert.equal(asked.length, 2, 'asked once per container and boot');
    // A new boot of the same container is asked again.
    probe.annotate([run(1, 'c1', { boot: 2 })], desired);
    await new Promise((r) => setImmediate(r));
    assert.equal(asked.length, 3);
  });

  test('a failed or timed-out exec leaves it unknown, and it is asked again', async () => {
    let n = 0;
    const probe = createJupyterProbe({
      runtime: {
        exec: async () => {
          n++;
          if (n === 1) throw new Error('container is not running');
          if (n === 2) return { output: '', exitCode: null, timedOut: true };
          return { output: '', exitCode: 127, timedOut: false };
        },
      },
      log: silentLog,
      onMissing: () => undefined,
    });
    const o = [run(1, 'c1')];
    for (let i = 0; i < 3; i++) {
      assert.equal(probe.annotate(o, desired)[0].jupyter_missing, undefined);
      await new Promise((r) => setImmediate(r));
    }
    assert.equal(n, 3);
    assert.equal(probe.annotate(o, desired)[0].jupyter_missing, true);
  });
});

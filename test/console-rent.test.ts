// The rent dialog's launch modes (console/src/lib/rent.ts, issue 32): each mode's body is what the spec's instance
// creation fields say for that runtype, a template's mode reads back into the form, and bad input is named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { argsWords, emptyForm, LAUNCH_MODES, openQuote, rentBody, templateMode, type RentForm } from '../console/src/lib/rent.js';
import { parseRuntype } from '../src/instances/instances-request.js';
import { templateRuntype } from '../src/templates/templates-contract.js';

const form = (over: Partial<RentForm>): RentForm => ({ ...emptyForm(), image: 'busybox:latest', ...over });
const body = (over: Partial<RentForm>, directPorts?: number) => {
  const r = rentBody(form(over), false, directPorts);
  assert.equal(r.errors, null, JSON.stringify(r.errors));
  return r.body!;
};

test('the five launch modes are the spec\'s runtypes, each read back by the server as itself', () => {
  assert.deepEqual(LAUNCH_MODES.map((m) => [m.value, m.label]), [
    ['ssh_proxy', 'SSH (proxy)'], ['ssh_direct', 'SSH (direct)'], ['jupyter_proxy', 'Jupyter (proxy)'], ['jupyter_direct', 'Jupyter (direct)'], ['args', 'Command'],
  ]);
  for (const m of LAUNCH_MODES) assert.equal(parseRuntype(m.value), m.value);
  assert.equal(emptyForm().mode, 'ssh_proxy');
});

test('SSH modes send runtype and onstart; nothing of Jupyter or args', () => {
  assert.deepEqual(body({ mode: 'ssh_proxy', onstart: 'echo hi', jupyterLab: true, jupyterDir: '/x', args: 'ignored' }), {
    disk: 8, runtype: 'ssh_proxy', image: 'busybox:latest', onstart: 'echo hi',
  });
  assert.deepEqual(body({ mode: 'ssh_direct' }), { disk: 8, runtype: 'ssh_direct', image: 'busybox:latest' });
});

test('Jupyter modes send use_jupyter_lab (always) and jupyter_dir (when given), and onstart', () => {
  assert.deepEqual(body({ mode: 'jupyter_proxy', onstart: 'pip list', jupyterLab: true, jupyterDir: ' /workspace/nb ' }), {
    disk: 8, runtype: 'jupyter_proxy', image: 'busybox:latest', onstart: 'pip list', use_jupyter_lab: true, jupyter_dir: '/workspace/nb',
  });
  assert.deepEqual(body({ mode: 'jupyter_direct' }), { disk: 8, runtype: 'jupyter_direct', image: 'busybox:latest', use_jupyter_lab: false });
});

test('Command mode sends runtype args and args_str as typed; no onstart (the image\'s entrypoint runs, not the service\'s)', () => {
  assert.deepEqual(body({ mode: 'args', args: `  sh -c 'echo "hi there"'  `, onstart: 'echo never' }), {
    disk: 8, runtype: 'args', image: 'busybox:latest', args_str: `sh -c 'echo "hi there"'`,
  });
  // Empty: the image's own command (spec: args_str is optional).
  assert.deepEqual(body({ mode: 'args', args: '   ' }), { disk: 8, runtype: 'args', image: 'busybox:latest' });
  assert.deepEqual(argsWords(`sh -c 'echo "hi there"'`), ['sh', '-c', 'echo "hi there"']);
});

test('bad input is named beside its field: an open quote, a relative Jupyter directory, a direct mode on an offer without direct ports', () => {
  assert.equal(openQuote(`sh -c 'echo hi`), "'");
  assert.equal(openQuote('sh -c "echo hi'), '"');
  assert.equal(openQuote(`sh -c "it's" 'a "b"' \\'`), null);
  assert.equal(openQuote('echo "a \\" b"'), null);
  assert.match(rentBody(form({ mode: 'args', args: `sh -c 'echo` }), false).errors!.args!, /single quote open/);
  // An open quote in a hidden field does not block another mode.
  assert.equal(rentBody(form({ mode: 'ssh_proxy', args: `sh -c 'echo` }), false).errors, null);
  assert.match(rentBody(form({ mode: 'jupyter_proxy', jupyterDir: 'notebooks' }), false).errors!.jupyterDir!, /absolute path/);
  assert.match(rentBody(form({ mode: 'jupyter_proxy', jupyterDir: '/' + 'x'.repeat(1024) }), false).errors!.jupyterDir!, /limit is 1024/);
  assert.match(rentBody(form({ mode: 'ssh_direct' }), false, 0).errors!.mode!, /no direct ports/);
  assert.match(rentBody(form({ mode: 'jupyter_direct' }), false, 0).errors!.mode!, /no direct ports/);
  assert.equal(rentBody(form({ mode: 'ssh_proxy' }), false, 0).errors, null);
  assert.equal(rentBody(form({ mode: 'ssh_direct' }), false, 4).errors, null);
  assert.match(rentBody(form({ mode: 'bogus' as never }), false).errors!.mode!, /pick a launch mode/);
  // The onstart limit applies to the modes that send it.
  assert.match(rentBody(form({ mode: 'jupyter_direct', onstart: 'x'.repeat(4049) }), false).errors!.onstart!, /limit is 4048/);
  assert.equal(rentBody(form({ mode: 'args', onstart: 'x'.repeat(4049) }), false).errors, null);
});

test('a template\'s launch mode reads as the server merges it', () => {
  const cases = [
    { runtype: 'ssh', ssh_direct: false, jup_direct: false },
    { runtype: 'ssh', ssh_direct: true, jup_direct: false },
    { runtype: 'jupyter', ssh_direct: false, jup_direct: false },
    { runtype: 'jupyter', ssh_direct: false, jup_direct: true },
    { runtype: 'args', ssh_direct: true, jup_direct: true },
  ];
  assert.deepEqual(cases.map(templateMode), ['ssh_proxy', 'ssh_direct', 'jupyter_proxy', 'jupyter_direct', 'args']);
  for (const c of cases) assert.equal(templateMode(c), templateRuntype(c));
});

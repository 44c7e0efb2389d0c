// The agent and the server stay apart (ARCHITECTURE: "Hosts: desired state and observed state"): the protocol's
// schema module imports nothing but typebox, and src/agent/ imports only itself, the SDK and that module, so the
// agent never carries server code and the server's routes can validate with the very schemas the agent is typed by.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { Compile } from 'typebox/compile';
import { ObservedInstance, PortMap, StatusBody } from '../src/protocol/agent-protocol-schemas.js';

const SRC = join(import.meta.dirname, '..', 'src');
const importsOf = (file: string) =>
  [...readFileSync(file, 'utf8').matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+['"]([^'"]+)['"]/gm)].map((m) => m[1]);

test('the schema module imports typebox only', () => {
  assert.deepEqual(importsOf(join(SRC, 'protocol', 'agent-protocol-schemas.ts')), ['typebox']);
});

/**
 * The protocol modules both sides share: the schemas, and the tunnel's targets and wire constants (issue 31), and the
 * terminal target's frames (issue 32), and the pull progress the agent sums and the server words (issue 33).
 */
const SHARED_PROTOCOL = ['agent-protocol-schemas.ts', 'tunnel-targets.ts', 'tunnel-wire.ts', 'terminal-wire.ts', 'pull-progress.ts'].map((f) => join(SRC, 'protocol', f));

const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));

test('src/agent/ imports only itself, the SDK, the shared protocol modules, and packages', () => {
  for (const file of filesUnder(join(SRC, 'agent'))) {
    for (const spec of importsOf(file)) {
      if (!spec.startsWith('.')) continue; // a package
      const target = resolve(dirname(file), spec).replace(/\.js$/, '.ts');
      const ok = target.startsWith(join(SRC, 'agent') + sep) || target.startsWith(join(SRC, 'sdk') + sep) || SHARED_PROTOCOL.includes(target)
        || target === join(SRC, '..', 'package.json');
      assert.ok(ok, `${relative(SRC, file)} imports ${spec}`);
    }
  }
});

test('the tunnel\'s protocol modules import nothing, the pull progress only the schemas (the agent carries them as they are)', () => {
  for (const file of SHARED_PROTOCOL.slice(1, -1)) assert.deepEqual(importsOf(file), [], relative(SRC, file));
  assert.deepEqual(importsOf(SHARED_PROTOCOL.at(-1)!), ['./agent-protocol-schemas.js']);
});

test('the port map is the instance\'s ports shape, and nothing else', () => {
  const ports = Compile(PortMap);
  assert.equal(ports.Check({ '22/tcp': [{ HostIp: '0.0.0.0', HostPort: '40001' }], '5000/udp': [{ HostIp: '::', HostPort: '40002' }] }), true);
  assert.equal(ports.Check({ ssh: [{ HostIp: '0.0.0.0', HostPort: '40001' }] }), false);
  assert.equal(ports.Check({ '22/tcp': [{ HostIp: '0.0.0.0', HostPort: 40001 }] }), false);
});

test('agent bodies are closed: an unknown field is refused', () => {
  const status = Compile(StatusBody);
  const entry = { instance_id: 1, generation: 1, boot: 0, state: 'running', container_id: 'abc', exit_code: null, ports: {}, error: null };
  assert.equal(Compile(ObservedInstance).Check(entry), true);
  assert.equal(status.Check({ agent_version: '0.1.0', desired_version: 3, observed: [entry] }), true);
  assert.equal(status.Check({ agent_version: '0.1.0', desired_version: 3, observed: [entry], machine_id: 9 }), false);
  assert.equal(status.Check({ agent_version: '0.1.0', desired_version: 3, observed: [{ ...entry, state: 'loading' }] }), false);
});

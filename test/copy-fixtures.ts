/**
 * Shared steps of the copy tests (not a test file itself): a TunnelsApi whose `rsync` streams are real rsync daemons
 * (`rsync --server --daemon` on a pair of pipes, as the agent runs one per stream), each serving one directory per
 * "instance" as the module named after it; and two instances of one renter running on real hosts of their own.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Duplex } from 'node:stream';
import type { TestApp } from './helpers/harness.js';
import { desired, hostWithMachine, observed, report } from './agent-server-fixtures.js';
import { rentOk } from './instances-fixtures.js';
import { TunnelError, type TunnelsApi, type TunnelTarget } from '../src/tunnels/tunnels-contract.js';

export interface FakeTunnels extends TunnelsApi {
  opened: { machineId: number; target: TunnelTarget }[];
  daemons: ChildProcess[];
  /** While set, `open` waits for it first (a slow host), after telling `waiting`. */
  hold?: { waiting: () => void; release: Promise<void> };
  /** Machines whose agents refuse every stream. */
  refusing: Set<number>;
}

/** A TunnelsApi whose streams are rsync daemons on pipes, one module per instance (its fs dir), as the agent's. */
export function fakeTunnels(fsOf: (id: number) => string): FakeTunnels {
  const fake: FakeTunnels = {
    opened: [],
    daemons: [],
    refusing: new Set(),
    connected: async () => true,
    async open(machineId, target) {
      fake.opened.push({ machineId, target });
      if (fake.hold) {
        fake.hold.waiting();
        await fake.hold.release;
      }
      if (fake.refusing.has(machineId)) throw new TunnelError('refused', 'the agent has no such container');
      assert.equal(target.kind, 'rsync');
      const id = target.instanceId;
      const conf = `${fsOf(id)}.rsyncd.conf`;
      const asRoot = process.getuid?.() === 0 ? 'uid = 0\ngid = 0\n' : '';
      writeFileSync(conf, `[${id}]\npath = ${fsOf(id)}\nuse chroot = no\nmunge symlinks = no\nread only = no\n${asRoot}`);
      const child = spawn('rsync', ['--server', '--daemon', `--config=${conf}`, '.'], { stdio: ['pipe', 'pipe', 'ignore'] });
      fake.daemons.push(child);
      const stream = Duplex.from({ readable: child.stdout!, writable: child.stdin! });
      stream.on('close', () => child.kill());
      return { stream, end: new Promise((r) => child.once('close', () => r({}))) };
    },
  };
  return fake;
}

export const exitedAll = (children: ChildProcess[]) =>
  Promise.all(children.map((c) => (c.exitCode !== null || c.signalCode !== null ? undefined : new Promise((r) => c.once('close', r)))));


/** Two instances of one renter, each running on a host of its own (real hosts, reported by their agents). */
export async function pairOnHosts(t: TestApp, fsOf: (id: number) => string): Promise<{ key: string; a: number; b: number; machineA: number; machineB: number }> {
  const renter = await t.createUser({ credit: 100 });
  const made: { id: number; machineId: number }[] = [];
  for (let i = 0; i < 2; i++) {
    const host = await hostWithMachine(t);
    const { id } = await rentOk(t, host.machineId * 100 + 1, { image: 'busybox' }, renter.api_key);
    const d = await desired(t, host);
    await report(t, host, [observed(id, d.instances[0].boot)], d.version);
    mkdirSync(fsOf(id), { recursive: true });
    made.push({ id, machineId: host.machineId });
  }
  return { key: renter.api_key, a: made[0].id, b: made[1].id, machineA: made[0].machineId, machineB: made[1].machineId };
}

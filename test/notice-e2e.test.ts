// The notice before a stop end to end (issue 33 item 3), on both databases: a test server on a real port, the real
// agent in-process with the Docker runtime (declared hardware: no NVIDIA runtime here), busybox containers. Each of
// the three causes reaches the container: an outbid bid instance (its program ignores TERM: SIGKILL after the server's
// 3 s grace), its renter's stop and a host's maintenance window (programs that trap TERM and print the notice they
// find in /run/gpuplane/stop: the same words as the instance's status_msg). Docker must be running: where it is not,
// this test fails; it never skips.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { startAgent } from '../src/agent/agent.js';
import { silentLog } from '../src/agent/agent-log.js';
import { realSystem } from '../src/agent/agent-system.js';
import { ownerId } from '../src/agent/owner.js';
import { randomBytes } from 'node:crypto';
import { createDockerRuntime } from '../src/agent/docker-runtime.js';
import { DIALECTS, OWNER_KEY } from './helpers/harness.js';
import { BUSYBOX_IMAGE, buildBusyboxImage, logShows } from './helpers/docker.js';
import { listeningApp, until } from './tunnel-fixtures.js';
import { rentOk, statusOf } from './instances-fixtures.js';

const GRACE = 3;
const docker = new Docker();
const scratch = mkdtempSync(join(tmpdir(), 'gpuplane-notice-e2e-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
const TRAPS = 'trap \'echo NOTICE:$(cat /run/gpuplane/stop); exit 0\' TERM; echo READY; while true; do sleep 0.2; done';
const IGNORES = 'trap \'\' TERM; echo READY; while true; do sleep 0.2; done';

for (const [n, dialect] of DIALECTS.entries()) {
  test(`[${dialect}] outbid, a renter's stop and a maintenance window each give the container the notice, SIGTERM, then SIGKILL after the grace`, async () => {
    await docker.ping();
    await buildBusyboxImage(docker, mkdtempSync(join(scratch, 'img-')));
    const hw = join(scratch, `hardware-${dialect}.json`);
    writeFileSync(hw, JSON.stringify({ gpu_name: 'RTX 4090', num_gpus: 2, gpu_ram: 24564, driver_version: '550.54.14', cuda_max_good: 12.4, public_ipaddr: '127.0.0.1' }));
    // The agent heartbeats in real time while the server's clock jumps for the window: it must not be taken as silent.
    const server = await listeningApp(dialect, { config: { GPUPLANE_STOP_GRACE_SECONDS: String(GRACE), GPUPLANE_AGENT_OFFLINE_AFTER: '86400' } });
    const app = server.app;
    const registration = `reg_notice_${randomBytes(12).toString('hex')}`;
    const agent = await startAgent(
      {
        url: server.url, apiKey: OWNER_KEY, stateDir: join(scratch, `state-${dialect}`), hardwareFile: hw, heartbeatS: 1, resyncS: 2,
        agentVersion: '0.1.0-test', publishIp: '127.0.0.1', portRange: { start: 47500 + n * 50, end: 47549 + n * 50 }, hostFirewall: false,
        tunnel: false, allowUnlimitedDisk: true,
      },
      { runtime: createDockerRuntime({}, docker, { allowUnlimitedDisk: true }), system: { ...realSystem, randomId: () => registration }, log: silentLog },
    );
    // Other runs on this daemon number their machines and instances alike: only this agent's containers (its owner).
    const mine = (...labels: string[]) => ({ label: [`gpuplane.owner=${ownerId(registration)}`, `gpuplane.machine_id=${agent.machineId}`, ...labels] });
    const containerOf = async (id: number) => {
      const [c] = await docker.listContainers({ all: true, filters: mine(`gpuplane.instance_id=${id}`) });
      return docker.getContainer(c.Id);
    };
    const exited = async (id: number) => {
      const c = await containerOf(id);
      await until(async () => (await c.inspect()).State.Status === 'exited', `instance ${id}'s container to stop`, 30_000);
      return c.inspect();
    };
    try {
      const listed = await app.request('PUT', '/api/v0/machines/create_asks/', { key: OWNER_KEY, body: { machine: agent.machineId, price_gpu: 0.4, price_min_bid: 0.2, end_date: null } });
      assert.equal(listed.status, 200, listed.raw);
      const renter = await app.createUser();
      const rent = (script: string, extra: Record<string, unknown> = {}) =>
        rentOk(app, agent.machineId * 100 + 1, { image: BUSYBOX_IMAGE, runtype: 'args', args: ['sh', '-c', script], disk: 1, ...extra }, renter.api_key);
      const runs = async (id: number) => {
        await until(async () => (await statusOf(app, id, renter.api_key)).actual_status === 'running', `instance ${id} running`, 60_000);
        await logShows(docker, (await containerOf(id)).id, 'READY');
      };
      const a = await rent(TRAPS);
      const bid = await rent(IGNORES, { price: 0.25 });
      await runs(a.id);
      await runs(bid.id);

      // Outbid: the bid's program ignores TERM, so SIGKILL ends it, after the grace.
      const t0 = Date.now() / 1000;
      const winner = await rent(TRAPS);
      const outbid = await statusOf(app, bid.id, renter.api_key);
      assert.match(outbid.status_msg, new RegExp(`^outbid: .*; stopping at \\S+: SIGTERM now, SIGKILL after ${GRACE} s$`));
      const b = await exited(bid.id);
      assert.equal(b.State.ExitCode, 137, 'killed');
      assert.ok(Date.parse(b.State.FinishedAt) / 1000 - t0 >= GRACE - 0.2, 'not before the grace');
      await runs(winner.id);

      // A renter's stop: the program traps TERM and reads why.
      const stop = await app.request('PUT', `/api/v0/instances/${a.id}/`, { key: renter.api_key, body: { state: 'stopped' } });
      assert.equal(stop.status, 200, stop.raw);
      const stopped = await statusOf(app, a.id, renter.api_key);
      const ca = await exited(a.id);
      assert.equal(ca.State.ExitCode, 0, 'its TERM handler ended it');
      const noticeA = JSON.parse(/NOTICE:(.*)/.exec(await logsOf(await containerOf(a.id)))![1]);
      assert.deepEqual([noticeA.reason, noticeA.grace_s], [stopped.status_msg, GRACE]);
      assert.match(noticeA.reason, /^stopped by its renter; stopping at /);

      // A maintenance window: the winner (still running) is stopped with its own notice, and comes back after it.
      const start = Math.floor(app.clock.now()) + 60;
      const maint = await app.request('PUT', `/api/v0/machines/${agent.machineId}/dnotify/`, { key: OWNER_KEY, body: { client_id: 'me', sdate: start, duration: 1, maintenance_category: 'disk' } });
      assert.equal(maint.status, 200, maint.raw);
      await app.advance(60);
      const cw = await exited(winner.id);
      assert.equal(cw.State.ExitCode, 0);
      const noticeW = JSON.parse(/NOTICE:(.*)/.exec(await logsOf(await containerOf(winner.id)))![1]);
      assert.match(noticeW.reason, new RegExp(`^host maintenance from \\S+ for 1 hours \\(disk\\); it starts again when the window ends; stopping at \\S+: SIGTERM now, SIGKILL after ${GRACE} s$`));
      await app.advance(3600);
      await until(async () => (await statusOf(app, winner.id, renter.api_key)).actual_status === 'running', 'the winner running again after the window', 60_000);
    } finally {
      // The agent first: running, it would make again the containers removed under it (desired running), and those
      // outlived the test (seen after clean-clone CI runs).
      await agent.stop();
      for (const c of await docker.listContainers({ all: true, filters: mine() })) {
        await docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined);
      }
      // And their networks (one per instance), which the stopped agent leaves as well.
      for (const n of await docker.listNetworks({ filters: mine() })) await docker.getNetwork(n.Id).remove().catch(() => undefined);
      // Without this the close waited about 70 s here for a connection the stopped agent left (not found which; the
      // agent files with a fake runtime close at once).
      app.app.server.closeAllConnections();
      await app.close();
    }
  });
}

async function logsOf(c: Docker.Container): Promise<string> {
  const buf = (await c.logs({ stdout: true, stderr: true })) as unknown as Buffer;
  return buf.toString('latin1');
}

// Pull progress end to end (issue 33 item 4), on both databases: the real agent (src/agent/agent.ts) with a fake
// runtime whose held pull emits Docker's progress messages (test/fixtures/docker-pull-progress.jsonl), against a test
// app on a real port. The agent sums the layers and reports at most every PULL_REPORT_INTERVAL_S; the renter sees
// `pulling image: … of … (N%)` in GET /instances/{id}/ and in the event stream, each new figure within 5 s of the
// progress (the bound); the pull's end makes it running, the progress gone. No registry is reachable here:
// the Docker runtime's side (dockerode's followProgress handing each message over) is not exercised by this test.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAgent } from '../src/agent/agent.js';
import { silentLog } from '../src/agent/agent-log.js';
import { realSystem, type AgentSystem } from '../src/agent/agent-system.js';
import { programRunner } from '../src/agent/hardware.js';
import { PULL_REPORT_INTERVAL_S } from '../src/agent/reconciler.js';
import type { DockerProgressEvent } from '../src/protocol/pull-progress.js';
import { DIALECTS, OWNER_KEY } from './helpers/harness.js';
import { fakeRuntime } from './agent-fake-runtime.js';
import { listeningApp, until } from './tunnel-fixtures.js';
import { rentOk, statusOf } from './instances-fixtures.js';

const FIX = join(import.meta.dirname, 'fixtures');
const scratch = mkdtempSync(join(tmpdir(), 'gpuplane-pull-progress-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
const smiDir = mkdtempSync(join(scratch, 'bin-'));
copyFileSync(join(FIX, 'nvidia-smi', 'fake-nvidia-smi.sh'), join(smiDir, 'nvidia-smi'));
let ids = 0;
const system: AgentSystem = {
  ...realSystem,
  randomId: () => `reg_pull_${process.pid}_${String(++ids).padStart(8, '0')}`,
  exec: programRunner({ ...process.env, PATH: `${smiDir}:${process.env.PATH}`, FAKE_NVIDIA_SMI: join(FIX, 'nvidia-smi', 'rtx4090-550') }),
  hostFacts: () => ({ cpuName: 'AMD Ryzen 9 7950X 16-Core Processor', cpuCores: 32, cpuArch: 'amd64', ramMb: 131072, hostname: 'rig-1', firstIpv4: '192.0.2.10' }),
  freeDiskGb: async () => 1800,
  isPortFree: async () => true,
};
const EVENTS = readFileSync(join(FIX, 'docker-pull-progress.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as DockerProgressEvent);
const IMAGE = 'example.org/big/image:1';

for (const dialect of DIALECTS) {
  test(`[${dialect}] a held pull's progress reaches the instance's status_msg and events, each figure within 5 s`, async () => {
    const server = await listeningApp(dialect);
    const fake = fakeRuntime();
    const release = fake.holdPull(IMAGE);
    const agent = await startAgent(
      {
        url: server.url, apiKey: OWNER_KEY, stateDir: join(scratch, `state-${dialect}`), heartbeatS: 3600, resyncS: 3600, agentVersion: '0.1.0-test',
        publishIp: '127.0.0.1', portRange: { start: 42100, end: 42199 }, hostFirewall: false, tunnel: false,
      },
      { runtime: fake.runtime, system, log: silentLog },
    );
    const app = server.app;
    try {
      const listed = await app.request('PUT', '/api/v0/machines/create_asks/', { key: OWNER_KEY, body: { machine: agent.machineId, price_gpu: 0.4, end_date: null } });
      assert.equal(listed.status, 200, listed.raw);
      const renter = await app.createUser();
      const { id } = await rentOk(app, agent.machineId * 100 + 1, { image: IMAGE }, renter.api_key);
      const msg = async () => (await statusOf(app, id, renter.api_key)).status_msg as string | null;
      /** Waits for the status_msg, and says how long it took. */
      const shows = async (text: string) => {
        const t0 = Date.now();
        await until(async () => (await msg()) === text, `status_msg ${JSON.stringify(text)} (now ${JSON.stringify(await msg())})`, 10_000);
        return (Date.now() - t0) / 1000;
      };
      await shows('pulling the image');
      assert.ok(fake.emitProgress(IMAGE, ...EVENTS.slice(0, 7)), 'the pull is under way');
      assert.ok(await shows('pulling image: 1.0 MB of 49.6 MB (2%)') < 5);
      fake.emitProgress(IMAGE, ...EVENTS.slice(7, 16));
      const took = await shows('pulling image: 75.7 MB of 284.6 MB (26%)');
      assert.ok(took < 5, `the next figure came ${took.toFixed(2)} s after the progress`);
      fake.emitProgress(IMAGE, ...EVENTS.slice(16));
      await shows('pulling image: extracting 284.6 MB of 284.6 MB (100%)');
      // The live view: each figure an event, and no more events than reports (throttled: these came in three bursts).
      const res = await app.request('GET', '/api/v0/instances/events/?since=0&timeout=0.5', { key: renter.api_key });
      const msgs = res.raw.split('\n\n').flatMap((b) => {
        const m = /^data: (.*)$/m.exec(b);
        return m ? [JSON.parse(m[1])] : [];
      }).filter((e) => e.id === id).map((e) => e.status_msg as string | null);
      const pulling = msgs.filter((m) => m?.startsWith('pulling'));
      assert.deepEqual(pulling.filter((m) => m !== 'pulling the image'), [
        'pulling image: 1.0 MB of 49.6 MB (2%)', 'pulling image: 75.7 MB of 284.6 MB (26%)', 'pulling image: extracting 284.6 MB of 284.6 MB (100%)',
      ]);
      assert.ok(PULL_REPORT_INTERVAL_S <= 5);
      release();
      await until(async () => (await statusOf(app, id, renter.api_key)).actual_status === 'running', 'running');
      assert.equal(await msg(), null);
    } finally {
      await agent.stop();
      await app.close();
    }
  });
}

// The GPUs of an outbid instance go to the new renter at once, but its container keeps them for up to the grace after
// SIGTERM (issue 33 item 3): the agent's reconcile loop makes the new container on those GPUs only once the old one has
// stopped; an instance on other GPUs is made meanwhile. Over the fake runtime, with the stop held as a grace would.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createReconciler } from '../src/agent/reconciler.js';
import { silentLog } from '../src/agent/agent-log.js';
import { fakeRuntime, FAKE_OWNER } from './agent-fake-runtime.js';
import { desiredInstance } from './agent-fake-server.js';

test('a container on a stopping container\'s GPU waits for that stop; one on another GPU does not', async () => {
  const fake = fakeRuntime();
  let releaseStop!: () => void;
  const stopHeld = new Promise<void>((r) => (releaseStop = r));
  const stops: string[] = [];
  const runtime = {
    ...fake.runtime,
    async stop(id: string, timeoutS: number) {
      stops.push(`${id} ${timeoutS}`);
      await stopHeld; // the grace, running out
      return fake.runtime.stop(id, timeoutS);
    },
  };
  const r = createReconciler({
    runtime, limits: { machineId: 42, owner: FAKE_OWNER, cpuCores: 16, ramMb: 65536, gpuDevices: true }, publishIp: '127.0.0.1',
    portRange: { start: 41000, end: 41009 }, records: new Map(), saveRecords: () => undefined, now: () => Date.now() / 1000, hostBootTime: 0,
    isPortFree: async () => true, stopTimeoutS: 10, log: silentLog, onObserved: () => undefined,
  });
  const bid = desiredInstance({ instance_id: 1, gpu_indices: [0] });
  r.setDesired([bid]);
  await r.idle();
  assert.equal(fake.byInstance(1)[0].status, 'running');

  // Outbid: the bid is to stop (its GPUs already given away), the winner runs on GPU 0, another rental on GPU 1.
  r.setDesired([
    { ...bid, state: 'stopped', gpu_indices: [], stop_grace_s: 30, stop_reason: 'outbid' },
    desiredInstance({ instance_id: 2, gpu_indices: [0] }),
    desiredInstance({ instance_id: 3, gpu_indices: [1] }),
  ]);
  const until = async (cond: () => boolean) => {
    for (let i = 0; i < 200 && !cond(); i++) await new Promise((res) => setTimeout(res, 5));
    assert.ok(cond());
  };
  await until(() => fake.byInstance(3)[0]?.status === 'running');
  assert.deepEqual(stops, [`${fake.byInstance(1)[0].id} 30`], 'the bid is being stopped, with the server\'s grace');
  assert.deepEqual(fake.byInstance(2), [], 'nothing made on GPU 0 while the stopping container has it');
  releaseStop();
  await r.idle();
  assert.equal(fake.byInstance(1)[0].status, 'exited');
  assert.equal(fake.byInstance(2)[0]?.status, 'running', 'made once the stop ended');
  await r.close();
});

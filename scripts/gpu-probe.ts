/**
 * scripts/gpu-probe.ts (issue 33): the agent's own GPU code on a real NVIDIA GPU where no container can run (a GPU
 * sandbox without Docker): the discovery the agent registers with, the hardware it offers, and the sampler's readings
 * idle and under load. It writes each raw nvidia-smi output beside its reading, so that a real driver's words become
 * the parsers' test fixtures (test/fixtures/nvidia-smi/), and prints one JSON report. scripts/gpu-probe.sh runs it;
 * scripts/gpu-check.sh is the whole check (server, agent, a rented container) for a machine with Docker.
 *
 * Usage: node --import tsx scripts/gpu-probe.ts OUTDIR [LOAD_COMMAND...]
 * LOAD_COMMAND, when given, is started before the second reading (something that keeps the GPU busy) and killed after.
 * Exit 0: every check passed; 1: one failed (the report says which); 2: no GPU (discovery failed).
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { discoverGpus, discoveredHardware, freeDiskGb, hostFacts, programRunner, DiscoveryError } from '../src/agent/hardware.js';
import { queryArgs, QUERY_FIELDS } from '../src/agent/nvidia-smi.js';
import { gpuSampler } from '../src/agent/gpu-sampler.js';
import { telemetryArgs } from '../src/agent/gpu-telemetry.js';

const [outDir, ...load] = process.argv.slice(2);
if (!outDir) {
  console.error('usage: gpu-probe.ts OUTDIR [LOAD_COMMAND...]');
  process.exit(64);
}
const exec = programRunner();
const failures: string[] = [];
const check = (ok: boolean, what: string) => void (ok ? undefined : failures.push(what));

/** Runs nvidia-smi as the agent does and keeps what it printed, stdout then stderr. */
async function capture(name: string, args: string[]): Promise<void> {
  const r = await exec('nvidia-smi', args);
  writeFileSync(join(outDir, name), r.stdout + r.stderr);
}

await capture('query.csv', queryArgs(QUERY_FIELDS));
await capture('banner.txt', []);
await capture('list.txt', ['-L']);

let discovery;
try {
  discovery = await discoverGpus(exec);
} catch (err) {
  console.log(JSON.stringify({ ok: false, discovery_error: err instanceof DiscoveryError ? err.message : String(err) }));
  process.exit(2);
}
const hardware = discoveredHardware(discovery, hostFacts(), await freeDiskGb('/'), { publicIp: '127.0.0.1', portRange: { start: 47000, end: 47099 } });
check(hardware.num_gpus === discovery.gpus.length && hardware.num_gpus > 0, 'hardware.num_gpus is the number of GPUs listed');
check(discovery.gpus.every((g) => /^GPU-[0-9a-f-]{36}$/.test(g.uuid ?? '')), 'every GPU has a UUID of the form GPU-xxxxxxxx-…');
check(discovery.gpus.every((g) => (g.gpu_ram ?? 0) > 0 && g.compute_cap !== null), 'every GPU has its memory and compute capability');
check(discovery.cuda_max_good > 0, 'the CUDA version is known');

const sampler = gpuSampler({ exec, uptimeS: () => Math.floor(process.uptime()), indices: discovery.gpus.map((g) => g.index), intervalS: 2, warn: (m) => console.error(m) });
await capture('telemetry-idle.txt', telemetryArgs());
const idle = await sampler.sample();
check(idle.nvml_error === null && idle.gpus.every((g) => g.fault === null), 'idle: no GPU has a fault');
check(idle.gpus.length === discovery.gpus.length && idle.gpus.every((g) => g.mem_total !== null && g.temp !== null), 'idle: every GPU has memory and temperature');

let busy = null;
if (load.length > 0) {
  const child = spawn(load[0], load.slice(1), { stdio: ['ignore', 'inherit', 'inherit'] });
  let best = idle;
  // The load takes a few seconds to reach the GPU (a framework's start); the busiest of several readings counts.
  for (let i = 0; i < 10; i++) {
    await sleep(2000);
    const s = await sampler.sample();
    if ((s.gpus[0]?.util ?? 0) >= (best.gpus[0]?.util ?? 0)) {
      best = s;
      await capture('telemetry-load.txt', telemetryArgs());
    }
    if ((s.gpus[0]?.util ?? 0) >= 50) break;
  }
  child.kill('SIGTERM');
  busy = best;
  check((busy.gpus[0]?.util ?? 0) > 0, 'under load: GPU 0 reports a utilization above 0');
  check((busy.gpus[0]?.mem_used ?? 0) > (idle.gpus[0]?.mem_used ?? 0), 'under load: GPU 0 uses more memory than idle');
}

console.log(JSON.stringify({ ok: failures.length === 0, failures, discovery, hardware, idle, busy }, null, 2));
process.exit(failures.length === 0 ? 0 : 1);

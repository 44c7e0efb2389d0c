// Renting throughput: PUT /api/v0/asks/{offer_id}/ creating real instances (offer check, GPU allocation, instance row,
// instance key, billing meter, boot jobs: one transaction each) on SQLite, real process with default settings,
// against a bare Fastify route answering the same path with the same JSON, measured in the same run.
import { defineBench, median, startBaseline, startGpuplane, type Figure, type Proc } from './lib.js';

/** Simulated machines added for the run, each with this many GPUs: every GPU is one rentable 1-GPU instance. */
const MACHINES = 1500;
const GPUS_PER_MACHINE = 8;
const TARGET_PER_S = 500;
const OFFER_ID_STRIDE = 100;

interface Run {
  perS: number;
  count: number;
  p50Ms: number;
  p99Ms: number;
}

/** `connections` clients rent back to back from the shared pool for `durationS` seconds (or until it runs dry). */
async function rentLoop(url: string, key: string, pool: number[], durationS: number, connections: number): Promise<Run> {
  const latencies: number[] = [];
  const t0 = performance.now();
  const end = t0 + durationS * 1000;
  const body = JSON.stringify({ image: 'pytorch/pytorch:latest', disk: 10, runtype: 'ssh_direc ssh_proxy', env: { TZ: 'UTC' } });
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) {
        const offer = pool.pop();
        if (offer === undefined) return;
        const s = performance.now();
        const res = await fetch(`${url}/api/v0/asks/${offer}/`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body,
        });
        const text = await res.text();
        if (res.status !== 200) throw new Error(`rent ${offer}: ${res.status} ${text}`);
        latencies.push(performance.now() - s);
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  const sorted = latencies.sort((a, b) => a - b);
  const pct = (p: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] * 10) / 10;
  return { perS: latencies.length / elapsed, count: latencies.length, p50Ms: pct(0.5), p99Ms: pct(0.99) };
}

async function addFleet(gp: Proc & { key: string }): Promise<number[]> {
  const pool: number[] = [];
  for (let i = 0; i < MACHINES; i++) {
    const res = await fetch(`${gp.url}/_emu/machines`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gp.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ num_gpus: GPUS_PER_MACHINE, price_gpu: 0.01, price_disk: 0.01 }),
    });
    if (res.status !== 200) throw new Error(`add machine: ${res.status} ${await res.text()}`);
    const { machine_id } = (await res.json()) as { machine_id: number };
    // The 1-GPU offer of a machine stays on offer until its last GPU is rented.
    for (let g = 0; g < GPUS_PER_MACHINE; g++) pool.push(machine_id * OFFER_ID_STRIDE + 1);
  }
  // Interleave machines so that concurrent clients mostly rent on different machines, as real renters do.
  return pool.sort((a, b) => (a % 7919) - (b % 7919) || a - b);
}

export default defineBench({
  name: 'rent',
  description: 'PUT /api/v0/asks/{offer_id}/ renting throughput on SQLite (real process, default settings) vs. bare Fastify',
  async run(ctx) {
    const gp = await startGpuplane(ctx, { env: { GPUPLANE_SIM_MACHINES: '0' } });
    try {
      const pool = await addFleet(gp);
      const sample = await rentLoop(gp.url, gp.key, pool, 0.5, 1);
      const base = await startBaseline(ctx, {
        method: 'PUT',
        path: '/api/v0/asks/:offer_id/',
        reply: { success: true, new_contract: 1, instance_api_key: 'gpi_0123456789abcdef0123456789abcdef0123456789a' },
      });
      try {
        const basePool = () => Array.from({ length: 1_000_000 }, (_, i) => OFFER_ID_STRIDE * (i + 1) + 1);
        const ours: Run[] = [];
        const baseline: Run[] = [];
        for (let round = 0; round < ctx.rounds; round++) {
          baseline.push(await rentLoop(base.url, gp.key, basePool(), ctx.durationS, ctx.connections));
          ours.push(await rentLoop(gp.url, gp.key, pool, ctx.durationS, ctx.connections));
          ctx.log(`  round ${round + 1}: baseline ${Math.round(baseline[round].perS)} req/s, gpuplane ${Math.round(ours[round].perS)} instances/s (${ours[round].count} rented)`);
        }
        const perS = median(ours.map((r) => r.perS));
        const basePerS = median(baseline.map((r) => r.perS));
        const figures: Figure[] = [
          { name: 'rent: gpuplane', value: Math.round(perS), unit: 'instances/s', target: { op: '>=', value: TARGET_PER_S } },
          { name: 'rent: bare Fastify baseline (same path, same client)', value: Math.round(basePerS), unit: 'req/s' },
          { name: 'rent: ratio to baseline', value: Math.round((perS / basePerS) * 100) / 100, unit: '×' },
          { name: 'rent: gpuplane latency p50 / p99', value: median(ours.map((r) => r.p50Ms)), unit: `ms / ${median(ours.map((r) => r.p99Ms))} ms` },
          { name: 'rent: instances rented in the run', value: sample.count + ours.reduce((n, r) => n + r.count, 0), unit: '' },
        ];
        return figures;
      } finally {
        await base.stop();
      }
    } finally {
      await gp.stop();
    }
  },
});

// Renting throughput: PUT /api/v0/asks/{offer_id}/ creating real instances (offer check, GPU allocation, instance row,
// instance key, billing meter, boot jobs: one transaction each) on SQLite, real process with default settings,
// against a bare Fastify route answering the same path with the same JSON, measured in the same run.
import { defineBench, median, startBaseline, startGpuplane, type Figure, type Proc } from './lib.js';
import { ensureWrk, runWrk } from './wrk.js';

/** Simulated machines added for the run, each with this many GPUs: every GPU is one rentable 1-GPU instance. */
const MACHINES = 3000;
const GPUS_PER_MACHINE = 8;
const TARGET_PER_S = 500;
const OFFER_ID_STRIDE = 100;

interface Run {
  perS: number;
  count: number;
  p50Ms: number;
  p99Ms: number;
  /** Offers of the pool the run may have used (sent, whether or not their reply arrived in time). */
  used: number;
}

const RENT_BODY = JSON.stringify({ image: 'pytorch/pytorch:latest', disk: 10, runtype: 'ssh_direc ssh_proxy', env: { TZ: 'UTC' } });

/**
 * wrk with `connections` connections rents back to back from `pool` (in order) for `durationS` seconds. A pool run
 * dry shows as non-2xx replies (offer 0 does not exist), which fails the measurement: the pool must outlast the run.
 */
async function rentLoop(url: string, key: string, pool: number[] | 'any', durationS: number, connections: number): Promise<Run> {
  // 'any' (the baseline): every request a new offer id, made up.
  const script = `
local ids = {${pool === 'any' ? '' : pool.join(',')}}
local i = 0
request = function()
  i = i + 1
  local id = ${pool === 'any' ? `i * ${OFFER_ID_STRIDE} + 1` : 'ids[i] or 0'}
  return wrk.format(nil, "/api/v0/asks/" .. id .. "/")
end
`;
  const r = await runWrk({
    url,
    connections,
    durationS,
    method: 'PUT',
    body: RENT_BODY,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    script,
  });
  if (r.non2xx || r.errors) throw new Error(`rent: ${r.non2xx} non-2xx, ${r.errors} errors of ${r.requests} (pool of ${pool.length} run dry?)`);
  const round1 = (ms: number) => Math.round(ms * 10) / 10;
  return { perS: r.rps, count: r.requests, p50Ms: round1(r.p50Ms), p99Ms: round1(r.p99Ms), used: r.requests + connections };
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
      ensureWrk();
      let pool = await addFleet(gp);
      const sample = await rentLoop(gp.url, gp.key, pool, 1, 1);
      pool = pool.slice(sample.used);
      const base = await startBaseline(ctx, {
        method: 'PUT',
        path: '/api/v0/asks/:offer_id/',
        reply: { success: true, new_contract: 1, instance_api_key: 'gpi_0123456789abcdef0123456789abcdef0123456789a' },
      });
      try {
        const ours: Run[] = [];
        const baseline: Run[] = [];
        for (let round = 0; round < ctx.rounds; round++) {
          baseline.push(await rentLoop(base.url, gp.key, 'any', ctx.durationS, ctx.connections));
          ours.push(await rentLoop(gp.url, gp.key, pool, ctx.durationS, ctx.connections));
          pool = pool.slice(ours[round].used);
          ctx.log(`  round ${round + 1}: baseline ${Math.round(baseline[round].perS)} req/s, gpuplane ${Math.round(ours[round].perS)} instances/s (${ours[round].count} rented)`);
        }
        const perS = median(ours.map((r) => r.perS));
        const basePerS = median(baseline.map((r) => r.perS));
        const figures: Figure[] = [
          { name: 'rent: gpuplane', value: Math.round(perS), unit: 'instances/s', target: { op: '>=', value: TARGET_PER_S } },
          { name: 'rent: bare Fastify baseline (same path, same client: wrk)', value: Math.round(basePerS), unit: 'req/s' },
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

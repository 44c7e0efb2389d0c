// Offer search, POST /api/v0/bundles/, over a simulated fleet of about 100,000 offers: four filters, an order and
// limit 64, against the bare-Fastify baseline returning the same JSON. Latency is measured one request at a time
// (the search's own cost, not queueing behind other connections); throughput with the run's connections. Also the
// gpuplane process's resident memory with the whole fleet in its offer index.
// Runs under `npm run bench -- offers`, or on its own: `node --import tsx bench/offers.bench.ts`.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { cryptoRandom } from '../src/platform/random.js';
import { RealClock } from '../src/platform/clock.js';
import { openDatabase } from '../src/database.js';
import { machinesServiceFactory } from '../src/machines/machines-service.js';
import { bundleSizes } from '../src/machines/machines-offers-contract.js';
import { compareWithBaseline, defineBench, load, makeTmpDir, median, startBaseline, startGpuplane, type BenchContext, type Figure } from './lib.js';
import { SEARCH_BODY } from './mixed.js';

/** Machines that give about 100,000 offers (2.4 bundles per machine on average). */
const MACHINES = 41_500;
const SEED = 1;
const P50_TARGET_MS = 5;
const P99_TARGET_MS = 20;
/** Issue 16: with 32 connections (wrk -t1 -c32), at least 3,000 searches a second, p99 at most 25 ms. */
const RPS_TARGET = 3000;
const LOADED_P99_TARGET_MS = 25;
/**
 * Issue 16: the index is ready before the server reports ready, so the first search costs what a search costs:
 * judged against the loaded p99 bound.
 */
const FIRST_SEARCH_TARGET_MS = LOADED_P99_TARGET_MS;
const RSS_TARGET_MB = 300;

/** The search measured: 4 filters, an order and a limit of 64 (issue 16), the one the mixed load runs too. */
const BODY = SEARCH_BODY;

const rssMb = (pid: number) => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024);

const bench = defineBench({
  name: 'offers',
  description: `offer search over ~100,000 offers (${MACHINES} simulated machines, SQLite): 4 filters + order + limit 64, vs. bare Fastify`,
  async run(ctx: BenchContext): Promise<Figure[]> {
    // The fleet is seeded into the database first (as a first start would), so the server's start stays inside the
    // harness's start-up timeout; the server then finds the fleet there and does not seed again.
    const dir = mkdtempSync(join(ctx.tmpDir, 'offers-'));
    const t0 = performance.now();
    const store = await openDatabase(`sqlite:${join(dir, 'gpuplane.db')}`);
    const fleet = machinesServiceFactory({ store, clock: new RealClock(), random: cryptoRandom, config: { mode: 'emulator', seed: SEED, simMachines: MACHINES } });
    await fleet.ensureSeeded();
    await store.close();
    const offers = fleet.simulatedMachines(SEED, MACHINES).machines.reduce((n, m) => n + bundleSizes(m.num_gpus).length, 0);
    ctx.log(`  seeded ${MACHINES} machines, ${offers} offers, in ${Math.round(performance.now() - t0)} ms`);
    const gp = await startGpuplane(ctx, { dir, env: { GPUPLANE_SIM_MACHINES: String(MACHINES), GPUPLANE_SEED: String(SEED) } });
    try {
      const target = { method: 'POST', path: '/api/v0/bundles/', headers: { authorization: `Bearer ${gp.key}` }, body: BODY };
      const t1 = performance.now();
      const first = await fetch(`${gp.url}${target.path}`, { method: 'POST', headers: { ...target.headers, 'content-type': 'application/json' }, body: JSON.stringify(BODY) });
      const reply = await first.json();
      if (first.status !== 200) throw new Error(`search answered ${first.status}: ${JSON.stringify(reply)}`);
      const firstMs = Math.round((performance.now() - t1) * 10) / 10;
      ctx.log(`  first search after start ${firstMs} ms, ${reply.offers.length} offers returned`);

      const figures = await compareWithBaseline(ctx, gp, target, undefined, { minRps: RPS_TARGET, maxP99Ms: LOADED_P99_TARGET_MS });
      // One connection: the latency of a search by itself.
      const baseline = await startBaseline(ctx, { method: 'POST', path: target.path, reply });
      let single: { ours: number[]; ours99: number[]; base: number[]; base99: number[] } = { ours: [], ours99: [], base: [], base99: [] };
      try {
        for (let round = 0; round < ctx.rounds; round++) {
          const b = await load(baseline, target, ctx.durationS, 1);
          const o = await load(gp, target, ctx.durationS, 1);
          single = { ours: [...single.ours, o.p50Ms], ours99: [...single.ours99, o.p99Ms], base: [...single.base, b.p50Ms], base99: [...single.base99, b.p99Ms] };
        }
      } finally {
        await baseline.stop();
      }
      const rss = rssMb(gp.child.pid!);
      return [
        { name: 'first search after start (server reported ready)', value: firstMs, unit: 'ms', target: { op: '<=', value: FIRST_SEARCH_TARGET_MS } },
        ...figures,
        { name: 'search latency p50 (1 connection)', value: median(single.ours), unit: 'ms', target: { op: '<=', value: P50_TARGET_MS } },
        { name: 'search latency p99 (1 connection)', value: median(single.ours99), unit: 'ms', target: { op: '<=', value: P99_TARGET_MS } },
        { name: 'baseline latency p50 / p99 (1 connection)', value: median(single.base), unit: `ms / ${median(single.base99)} ms` },
        { name: 'gpuplane resident memory with the fleet indexed', value: rss, unit: 'MB', target: { op: '<=', value: RSS_TARGET_MB } },
      ];
    } finally {
      await gp.stop();
    }
  },
});

export default bench;

// On its own: `node --import tsx bench/offers.bench.ts [--duration S]`.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const arg = (name: string, def: number) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? Number(process.argv[i + 1]) : def;
  };
  const tmp = makeTmpDir();
  try {
    const figures = await bench.run({
      durationS: arg('duration', 3),
      connections: arg('connections', 32),
      rounds: arg('rounds', 2),
      tmpDir: tmp.dir,
      log: (line) => process.stdout.write(`${line}\n`),
    });
    for (const f of figures) process.stdout.write(`  ${f.name}: ${f.value} ${f.unit}${f.target ? ` (target ${f.target.op} ${f.target.value})` : ''}\n`);
  } finally {
    tmp.remove();
  }
}

// Resident memory of a gpuplane process on PostgreSQL over a soak of the mixed load (bench/mixed.ts, 32 connections;
// the mix keeps its live instances capped, so the working set is steady): after a warm-up (the first fifth, at least
// 30 s) it must stay flat, within 10% of where the warm-up ended (issue 16). Length: GPUPLANE_BENCH_SOAK_MINUTES
// (default 10; e.g. `GPUPLANE_BENCH_SOAK_MINUTES=2 npm run bench -- pg-soak`).
import { defineBench, startGpuplane, type Figure } from './lib.js';
import { prepareSlices, runMixed } from './mixed.js';
import { createBenchDatabase, rssMb } from './pg.js';
import { ensureWrk } from './wrk.js';

const DEFAULT_MINUTES = 10;
const SAMPLE_S = 10;
const MAX_GROWTH_PCT = 10;

export default defineBench({
  name: 'pg-soak',
  description: 'resident memory of a process on PostgreSQL over a mixed-load soak (GPUPLANE_BENCH_SOAK_MINUTES, default 10)',
  async run(ctx) {
    ensureWrk();
    const minutes = Number(process.env.GPUPLANE_BENCH_SOAK_MINUTES ?? DEFAULT_MINUTES);
    if (!(minutes > 0)) throw new Error(`GPUPLANE_BENCH_SOAK_MINUTES must be a positive number, got ${process.env.GPUPLANE_BENCH_SOAK_MINUTES}`);
    const totalS = Math.round(minutes * 60);
    const warmS = Math.max(30, Math.round(totalS / 5));
    const db = await createBenchDatabase(ctx, 'soak');
    const gp = await startGpuplane(ctx, { env: { GPUPLANE_DATABASE_URL: db.url } });
    try {
      const slices = await prepareSlices(gp.url, gp.key, 1, 'soak');
      const samples: Array<{ s: number; mb: number }> = [];
      const t0 = performance.now();
      const timer = setInterval(() => {
        const s = Math.round((performance.now() - t0) / 1000);
        samples.push({ s, mb: rssMb(gp.child.pid!) });
        if (s % 60 < SAMPLE_S) ctx.log(`  ${s} s: ${samples.at(-1)!.mb} MB`);
      }, SAMPLE_S * 1000);
      const load = await runMixed([gp.url], slices, 32, totalS).finally(() => clearInterval(timer));
      samples.push({ s: totalS, mb: rssMb(gp.child.pid!) });
      const atWarm = samples.filter((x) => x.s <= warmS).at(-1)?.mb ?? samples[0].mb;
      const after = samples.filter((x) => x.s > warmS).map((x) => x.mb);
      const peak = Math.max(...after);
      const growth = ((peak - atWarm) / atWarm) * 100;
      ctx.log(`  mixed load ${Math.round(load.rps)} req/s over ${totalS} s (${load.non2xx} non-2xx, ${load.errors} errors)`);
      const figures: Figure[] = [
        { name: `soak ${minutes} min: resident memory after the warm-up (${warmS} s)`, value: atWarm, unit: 'MB' },
        { name: `soak ${minutes} min: peak after the warm-up`, value: peak, unit: 'MB' },
        { name: `soak ${minutes} min: growth after the warm-up`, value: Math.round(growth * 10) / 10, unit: '%', target: { op: '<=', value: MAX_GROWTH_PCT } },
      ];
      return figures;
    } finally {
      await gp.stop();
      await db.drop();
    }
  },
});

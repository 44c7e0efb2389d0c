// Advancing the virtual clock 60 s with 200 instances booting, on PostgreSQL (issue 16: ≤ 0.5 s idle, ≤ 2 s under
// the mixed load of bench/mixed.ts), with the same advance on SQLite for comparison. One process; the advance is
// `POST /_emu/clock/advance`, timed from the client, and the statements the database ran for it are counted
// (bench/pg.ts: pg_stat_statements when the server loads it, else the transactions of pg_stat_database).
import { defineBench, median, startGpuplane, type Figure, type Proc } from './lib.js';
import { clearSlice, prepareSlices, runMixed } from './mixed.js';
import { addMachines, api, createBenchDatabase, rent, statementCounter } from './pg.js';
import { ensureWrk, processCpuSeconds } from './wrk.js';

const INSTANCES = 200;
const ADVANCE_S = 60;
const IDLE_TARGET_S = 0.5;
const LOADED_TARGET_S = 2;
const CLOCK_START = 1_800_000_000;

type Server = Proc & { key: string };

/**
 * An image no machine has yet, so every round's instances pull it (the boot the figure is about: provisioning, the
 * pull, running). With one image for all rounds, the machines would have it from the first round on, and later rounds
 * would start their containers at once.
 */
const imageOf = (phase: string, round: number) => `bench/clock-${phase}-${round}:latest`;

/**
 * Rents INSTANCES instances (booting from now), advances the clock, destroys them; the advance's seconds.
 * `counted`: run before the advance, and its result after it (the statements of the advance alone).
 */
async function advanceOnce(s: Server, offers: number[], cpuS: number[], image: string, counted?: () => Promise<() => Promise<void>>): Promise<number> {
  const ids: number[] = [];
  for (let i = 0; i < INSTANCES; i++) ids.push(await rent(s.url, s.key, offers[i], image));
  const after = await counted?.();
  const cpu0 = processCpuSeconds(s.child.pid!);
  const t0 = performance.now();
  await api(s.url, s.key, 'POST', '/_emu/clock/advance', { seconds: ADVANCE_S });
  const seconds = (performance.now() - t0) / 1000;
  cpuS.push(processCpuSeconds(s.child.pid!) - cpu0);
  await after?.();
  for (const id of ids) await api(s.url, s.key, 'DELETE', `/api/v0/instances/${id}/`);
  return seconds;
}

export default defineBench({
  name: 'pg-clock',
  description: `POST /_emu/clock/advance ${ADVANCE_S} s with ${INSTANCES} instances booting: PostgreSQL idle and under mixed load, SQLite idle`,
  async run(ctx) {
    ensureWrk();
    const db = await createBenchDatabase(ctx, 'clock');
    const env = { GPUPLANE_CLOCK: 'virtual', GPUPLANE_CLOCK_START: String(CLOCK_START) };
    const servers: Server[] = [];
    try {
      const lite = await startGpuplane(ctx, { env });
      servers.push(lite);
      const pg = await startGpuplane(ctx, { env: { ...env, GPUPLANE_DATABASE_URL: db.url } });
      servers.push(pg);
      const liteFleet = await addMachines(lite.url, lite.key, INSTANCES / 8, 8);
      const pgFleet = await addMachines(pg.url, pg.key, INSTANCES / 8, 8);
      const counter = await statementCounter(db.url);
      const liteIdle: number[] = [];
      const pgIdle: number[] = [];
      const pgLoaded: number[] = [];
      const liteCpu: number[] = [];
      const pgCpu: number[] = [];
      let counted = '';
      for (let round = 0; round < ctx.rounds; round++) {
        liteIdle.push(await advanceOnce(lite, liteFleet.offers, liteCpu, imageOf('idle', round)));
        pgIdle.push(await advanceOnce(pg, pgFleet.offers, pgCpu, imageOf('idle', round), round > 0 ? undefined : async () => {
          await counter.reset();
          return async () => {
            const c = await counter.read();
            counted = c.statements === null ? `${c.transactions} transactions (pg_stat_statements not loaded)` : `${c.statements} statements in ${c.transactions} transactions`;
            ctx.log(`  the advance on PostgreSQL, idle: ${counted}`);
            for (const t of c.top) ctx.log(`    ${String(t.calls).padStart(6)} × ${String(t.ms).padStart(5)} ms  ${t.query}`);
          };
        }));
        ctx.log(`  round ${round + 1}: SQLite ${liteIdle[round].toFixed(2)} s (server CPU ${liteCpu[round].toFixed(2)} s), PostgreSQL idle ${pgIdle[round].toFixed(2)} s (server CPU ${pgCpu[round].toFixed(2)} s)`);
      }
      // Under load: the mixed load runs on the same process while the advance runs.
      const slices = await prepareSlices(pg.url, pg.key, 1, 'clock');
      for (let round = 0; round < ctx.rounds; round++) {
        const ids: number[] = [];
        for (let i = 0; i < INSTANCES; i++) ids.push(await rent(pg.url, pg.key, pgFleet.offers[i], imageOf('loaded', round)));
        const loadS = 6;
        const loading = runMixed([pg.url], slices, 32, loadS);
        await new Promise((r) => setTimeout(r, 1500));
        const t0 = performance.now();
        await api(pg.url, pg.key, 'POST', '/_emu/clock/advance', { seconds: ADVANCE_S });
        pgLoaded.push((performance.now() - t0) / 1000);
        const load = await loading;
        await clearSlice(pg.url, slices[0]);
        for (const id of ids) await api(pg.url, pg.key, 'DELETE', `/api/v0/instances/${id}/`);
        ctx.log(`  round ${round + 1}: PostgreSQL under load ${pgLoaded[round].toFixed(2)} s (mixed load ${Math.round(load.rps)} req/s)`);
      }
      const s = (xs: number[]) => Math.round(median(xs) * 100) / 100;
      const figures: Figure[] = [
        { name: `advance ${ADVANCE_S} s, ${INSTANCES} booting: SQLite`, value: s(liteIdle), unit: 's' },
        { name: `advance ${ADVANCE_S} s, ${INSTANCES} booting: PostgreSQL idle`, value: s(pgIdle), unit: 's', target: { op: '<=', value: IDLE_TARGET_S } },
        { name: `advance ${ADVANCE_S} s, ${INSTANCES} booting: PostgreSQL under mixed load`, value: s(pgLoaded), unit: 's', target: { op: '<=', value: LOADED_TARGET_S } },
      ];
      return figures;
    } finally {
      await Promise.all(servers.map((x) => x.stop()));
      await db.drop();
    }
  },
});

// The simulated hosts' heartbeat job at 20,000 machines on PostgreSQL (issue 16; src/emulator/simulated-hosts/simhost-heartbeat.ts). One
// process with a virtual clock; a machine made silent (`no_heartbeat`) keeps the job chain running, and each
// `POST /_emu/clock/advance` of one heartbeat interval runs the job once. Measured: the advance with the chain running
// less the same advance with no chain (the job's own time), the machine rows each run wrote (a new row
// version: its xmin), and whether a run waits for a healthy machine's row that another connection holds locked
// (as a rental or an agent's report does).
import pg from 'pg';
import { defineBench, median, startGpuplane, type Figure } from './lib.js';
import { api, createBenchDatabase } from './pg.js';

const MACHINES = 20_000;
const RUNS = 8;
const INTERVAL_S = 30; // HEARTBEAT_INTERVAL_S
/** How long the row lock is held while a run is attempted: a run still waiting then is blocked by it. */
const HOLD_MS = 3000;
const CLOCK_START = 1_800_000_000;

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

export default defineBench({
  name: 'pg-heartbeat',
  description: `the heartbeat job at ${MACHINES} simulated machines on PostgreSQL: time per run, machine rows written, blocked by a locked row`,
  async run(ctx) {
    const db = await createBenchDatabase(ctx, 'heartbeat');
    const env = { GPUPLANE_CLOCK: 'virtual', GPUPLANE_CLOCK_START: String(CLOCK_START), GPUPLANE_DATABASE_URL: db.url, GPUPLANE_SIM_MACHINES: String(MACHINES) };
    const gp = await startGpuplane(ctx, { env });
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const advance = () => api(gp.url, gp.key, 'POST', '/_emu/clock/advance', { seconds: INTERVAL_S });
    // Every row version has its own xmin: a row the job wrote has a new one.
    const versions = async () => new Map((await client.query('SELECT id, xmin::text AS v FROM fleet_machines')).rows.map((r) => [r.id as number, r.v as string]));
    const changed = (a: Map<number, string>, b: Map<number, string>) => [...b].filter(([id, v]) => a.get(id) !== v).length;
    try {
      const n = (await client.query('SELECT count(*)::int AS n FROM fleet_machines')).rows[0].n as number;
      ctx.log(`  ${n} machines`);
      // No silent host: the advance runs no heartbeat job.
      const idle: number[] = [];
      for (let i = 0; i < RUNS; i++) idle.push(await timed(advance));
      // A silent host: every advance of one interval runs the job once. A new one each run keeps the chain going.
      let machine = 1;
      const silent = () => api(gp.url, gp.key, 'POST', '/_emu/faults', { fault: 'no_heartbeat', machine_id: machine++ });
      const busy: number[] = [];
      const written: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        await silent();
        const before = await versions();
        busy.push(await timed(advance));
        written.push(changed(before, await versions()));
      }
      // A healthy machine's row locked by another connection while a run is due.
      await silent();
      await client.query('BEGIN');
      await client.query('SELECT id FROM fleet_machines WHERE id = $1 FOR UPDATE', [MACHINES]);
      const run = timed(advance);
      await new Promise((r) => setTimeout(r, HOLD_MS));
      await client.query('COMMIT');
      const lockedMs = await run;
      ctx.log(`  advance ${INTERVAL_S} s, no job: ${idle.map((x) => x.toFixed(0)).join(' ')} ms`);
      ctx.log(`  advance ${INTERVAL_S} s, one heartbeat run: ${busy.map((x) => x.toFixed(0)).join(' ')} ms`);
      ctx.log(`  machine rows written by each run: ${written.join(' ')}`);
      ctx.log(`  with a healthy machine's row locked for ${HOLD_MS} ms: the advance took ${lockedMs.toFixed(0)} ms`);
      const figures: Figure[] = [
        { name: `heartbeat run at ${n} machines (advance less the advance with no job)`, value: Math.round(median(busy) - median(idle)), unit: 'ms' },
        { name: 'machine rows written per run', value: median(written), unit: 'rows' },
        { name: `a run while a healthy machine's row is locked (${HOLD_MS} ms)`, value: Math.round(lockedMs), unit: 'ms', target: { op: '<=', value: HOLD_MS / 2 } },
      ];
      return figures;
    } finally {
      await client.end().catch(() => undefined);
      await gp.stop();
      await db.drop();
    }
  },
});

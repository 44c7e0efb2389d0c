// The statements PostgreSQL runs for each request of the mixed load (bench/mixed.ts), one kind at a time: rent,
// destroy, offer search, charges, instance list, and the simulated agents' passes that follow a rent and a destroy.
// On this machine a statement's round trip costs more CPU than most statements take to run, so these counts are
// what the `pg-mixed` ratio is made of. One process, virtual clock (nothing runs in the background between
// requests); pg_stat_statements when the server loads it (bench/pg.ts), else transactions only.
import { defineBench, startGpuplane, type Figure } from './lib.js';
import { chargesPath, SEARCH_BODY } from './mixed.js';
import { addMachines, api, createBenchDatabase, RENT_BODY, statementCounter } from './pg.js';

/** Requests of each kind counted; the figures are per request. */
const N = 20;
const CLOCK_START = 1_800_000_000;
/** Long enough for every boot the bench starts (the seeded boot times are at most 21 s), short of most periodic jobs. */
const BOOT_S = 30;

export default defineBench({
  name: 'pg-statements',
  description: `statements per request of each kind of the mixed load, on PostgreSQL (${N} of each, one process)`,
  async run(ctx) {
    const db = await createBenchDatabase(ctx, 'statements');
    const env = { GPUPLANE_CLOCK: 'virtual', GPUPLANE_CLOCK_START: String(CLOCK_START), GPUPLANE_DATABASE_URL: db.url };
    const s = await startGpuplane(ctx, { env });
    try {
      const { offers } = await addMachines(s.url, s.key, N, 8);
      const { api_key: renter } = await api(s.url, s.key, 'POST', '/_emu/users', { email: 'statements@example.com', credit: 1e8 });
      const counter = await statementCounter(db.url);
      const figures: Figure[] = [];
      /** Runs `n` requests through `each` and logs the statements per request; returns them. */
      const count = async (label: string, n: number, each: (i: number) => Promise<unknown>): Promise<void> => {
        await counter.reset();
        for (let i = 0; i < n; i++) await each(i);
        const c = await counter.read();
        const per = (x: number) => Math.round((x / n) * 10) / 10;
        ctx.log(c.statements === null
          ? `  ${label}: ${per(c.transactions)} transactions per request (pg_stat_statements not loaded)`
          : `  ${label}: ${per(c.statements)} statements in ${per(c.transactions)} transactions per request; by calls per request:`);
        for (const t of c.top.slice(0, 40)) ctx.log(`    ${String(per(t.calls)).padStart(5)} × ${t.query}`);
        figures.push({ name: `${label}: statements per request`, value: per(c.statements ?? Number.NaN), unit: `(${per(c.transactions)} transactions)` });
      };
      const rentOne = async (i: number) => (await api(s.url, `${renter}`, 'PUT', `/api/v0/asks/${offers[i]}/`, RENT_BODY)) as { new_contract: number; instance_api_key: string };
      // Warm-up: every statement prepared and every cache filled once, as in a running server.
      const warm = await rentOne(N);
      await api(s.url, s.key, 'POST', '/_emu/clock/advance', { seconds: BOOT_S });
      await api(s.url, warm.instance_api_key, 'DELETE', `/api/v0/instances/${warm.new_contract}/`);
      await api(s.url, s.key, 'POST', '/_emu/clock/advance', { seconds: BOOT_S });

      const rented: Array<{ new_contract: number; instance_api_key: string }> = [];
      await count('rent', N, async (i) => rented.push(await rentOne(i)));
      // Each rent's machine is due for its agent: the provisioning delay, then the pull, then the container runs.
      await count('agent passes of the rents (per rent)', N, async (i) => {
        if (i === 0) await api(s.url, s.key, 'POST', '/_emu/clock/advance', { seconds: BOOT_S });
      });
      await count('offer search', N, () => api(s.url, renter, 'POST', '/api/v0/bundles/', SEARCH_BODY));
      await count('charges', N, () => api(s.url, renter, 'GET', chargesPath(CLOCK_START)));
      await count('instance list', N, () => api(s.url, renter, 'GET', '/api/v0/instances/'));
      await count('destroy', N, (i) => api(s.url, rented[i].instance_api_key, 'DELETE', `/api/v0/instances/${rented[i].new_contract}/`));
      await count('agent passes of the destroys (per destroy)', N, async (i) => {
        if (i === 0) await api(s.url, s.key, 'POST', '/_emu/clock/advance', { seconds: BOOT_S });
      });
      return figures;
    } finally {
      await s.stop();
      await db.drop();
    }
  },
});

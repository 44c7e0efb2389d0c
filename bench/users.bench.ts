// GET /api/v0/users/current, the smallest authenticated route: Bearer parsing, the key lookup (SHA-256 + one
// indexed query), the clock, serialization and the request log line, against a bare Fastify route returning the same
// JSON. Twice: with the real clock, and with the virtual clock (emulator), which lives in the database because
// processes sharing the database share it.
import { compareWithBaseline, defineBench, startGpuplane, type Figure } from './lib.js';

/** Issue 16: at least 0.6× the bare-Fastify rate, wrk -t1 -c32, with either clock. */
const MIN_RATIO = 0.6;

export default defineBench({
  name: 'users',
  description: 'GET /api/v0/users/current on SQLite (real process, default settings; real and virtual clock) vs. bare Fastify',
  async run(ctx) {
    const figures: Figure[] = [];
    for (const clock of ['real', 'virtual'] as const) {
      ctx.log(`  ${clock} clock:`);
      const gp = await startGpuplane(ctx, { env: { GPUPLANE_CLOCK: clock } });
      try {
        const measured = await compareWithBaseline(ctx, gp, {
          method: 'GET',
          path: '/api/v0/users/current',
          headers: { authorization: `Bearer ${gp.key}` },
        }, MIN_RATIO);
        figures.push(...measured.map((f) => ({ ...f, name: `${f.name.replace('GET /api/v0/users/current', `GET /users/current (${clock} clock)`)}` })));
      } finally {
        await gp.stop();
      }
    }
    return figures;
  },
});

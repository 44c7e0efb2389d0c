// GET /api/v0/users/current, the smallest authenticated route: Bearer parsing, the key lookup (SHA-256 + one
// indexed query), serialization and the request log line, against a bare Fastify route returning the same JSON.
import { compareWithBaseline, defineBench, startGpuplane } from './lib.js';

/** Issue 2: at least half the bare-Fastify rate. */
const MIN_RATIO = 0.5;

export default defineBench({
  name: 'users',
  description: 'GET /api/v0/users/current on SQLite (real process, default settings) vs. bare Fastify',
  async run(ctx) {
    const gp = await startGpuplane(ctx);
    try {
      return await compareWithBaseline(ctx, gp, {
        method: 'GET',
        path: '/api/v0/users/current',
        headers: { authorization: `Bearer ${gp.key}` },
      }, MIN_RATIO);
    } finally {
      await gp.stop();
    }
  },
});

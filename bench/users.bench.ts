// GET /api/v0/users/current, the smallest authenticated route: Bearer parsing, the key lookup (SHA-256 + one
// indexed query), serialization and the request log line, against a bare Fastify route returning the same JSON.
import { compareWithBaseline, defineBench, startGpuplane } from './lib.js';

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
      });
    } finally {
      await gp.stop();
    }
  },
});

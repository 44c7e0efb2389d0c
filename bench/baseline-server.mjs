// The baseline of every benchmark: a bare Fastify app (no logging, no hooks, no schema, no database) answering one
// route with a fixed JSON reply. Plain JavaScript so that nothing but Fastify itself is measured.
import Fastify from 'fastify';

const { method, path, reply } = JSON.parse(process.env.GPUPLANE_BASELINE ?? '{}');
const app = Fastify({ logger: false });
app.route({ method, url: path, handler: async () => reply });
await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${JSON.stringify({ msg: 'baseline listening', port: app.server.address().port })}\n`);
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));

import type { TypedApp } from '../platform/http.js';
import { ErrorReply } from '../platform/schemas.js';
import type { OpsService } from './ops-service.js';
import { HealthReply, MetricsReply, ReadyReply, VersionReply } from './ops-schemas.js';

/**
 * Probes and metrics for operators: no API key. They skip the virtual clock's database read (app.ts), so that
 * liveness never depends on the database and readiness reports its failure itself.
 */
const OPS = { category: 'public', noVirtualClock: true } as const;
const tags = ['operations'];

export async function opsRoutes(app: TypedApp, { ops }: { ops: OpsService }): Promise<void> {
  app.get('/healthz', {
    config: OPS,
    schema: { tags, summary: 'Liveness: the process is up and serving (no key needed)', response: { 200: HealthReply } },
  }, async () => ops.health());

  app.get('/readyz', {
    config: OPS,
    schema: {
      tags,
      summary: 'Readiness: start-up done (the emulator: its state or seed file and init scripts) and the database answers (no key needed); 503 service_unavailable with the reason when not',
      response: { 200: ReadyReply, 503: ErrorReply },
    },
  }, async () => ops.readiness());

  app.get('/api/v0/version/', {
    config: OPS,
    schema: { tags, summary: "gpuplane's version (no key needed)", response: { 200: VersionReply } },
  }, async () => ops.version());

  app.get('/metrics', {
    config: OPS,
    schema: {
      tags,
      summary: 'Prometheus metrics (text format). Open unless GPUPLANE_METRICS_TOKEN is set; then it needs Authorization: Bearer <token>',
      response: { 200: MetricsReply, 401: ErrorReply },
    },
  }, async (request, reply) => {
    ops.authorizeMetrics(request.headers.authorization);
    return reply.type(ops.contentType).send(await ops.metricsText());
  });
}

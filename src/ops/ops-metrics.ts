/**
 * Prometheus metrics (prom-client). Requests are counted and timed where each request's log line is written
 * (platform/http.ts RequestLog), at a cost of about half a microsecond; everything else is read when scraped.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Upper bounds of the request-duration buckets, seconds: most API requests take well under a millisecond. */
const DURATION_BUCKETS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** The route label of a request no route matched (a 404): one series whatever the URL, so URLs cannot add series. */
export const UNMATCHED_ROUTE = 'unmatched';
const REQUEST_LABELS = ['route', 'method', 'status'] as const;
const DURATION_NAME = 'gpuplane_http_request_duration_seconds';

let processRegistry: Registry | undefined;

/**
 * The process's own metrics (CPU, memory, event loop delay, GC): collected once per process, however many apps it
 * builds (the tests build hundreds), since each collection keeps an event-loop monitor and a GC observer running.
 */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

type Labels<L extends string> = Partial<Record<L, string | number>>;

export class Metrics {
  private readonly registry = new Registry();
  private readonly duration = new Histogram({
    name: DURATION_NAME,
    help: 'Time to answer an HTTP request, by route pattern, method and status (its _count is the request count)',
    labelNames: REQUEST_LABELS,
    buckets: DURATION_BUCKETS_S,
    registers: [this.registry],
  });

  constructor() {
    processMetrics();
    const duration = this.duration;
    // The same counts as the histogram's _count, under the usual name; taken from it when scraped, so a request
    // pays for one observation, not two.
    new Counter({
      name: 'gpuplane_http_requests_total',
      help: 'HTTP requests answered, by route pattern, method and status',
      labelNames: REQUEST_LABELS,
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const v of (await duration.get()).values) {
          if (v.metricName === `${DURATION_NAME}_count`) this.inc(v.labels, v.value);
        }
      },
    });
  }

  /** One answered request, with the milliseconds it took (RequestLog calls it). */
  readonly requestCompleted = (request: FastifyRequest, reply: FastifyReply, ms: number): void => {
    // The route's pattern (`/api/v0/instances/:id/`), never the raw URL; none for the not-found handler.
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    this.duration.observe({ route, method: request.method, status: reply.statusCode }, ms / 1000);
  };

  /** A gauge of this app, set by whoever reads its value at scrape time. */
  gauge<L extends string = never>(name: string, help: string, labelNames: readonly L[] = []): { set(labels: Labels<L>, value: number): void; reset(): void } {
    const g = new Gauge({ name, help, labelNames, registers: [this.registry] });
    return { set: (labels, value) => g.set(labels, value), reset: () => g.reset() };
  }

  readonly contentType = this.registry.contentType;

  /** The text exposition: the process's metrics, then this app's. */
  async text(): Promise<string> {
    const [own, process] = await Promise.all([this.registry.metrics(), processMetrics().metrics()]);
    return `${process}\n${own}`;
  }
}

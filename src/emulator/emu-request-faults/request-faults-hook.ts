/**
 * The request faults' hook (issue 34 item 3): every API request of an emulator-mode app is checked against the rules
 * (`/_emu/request-faults`) before it is authenticated, as a rate limit or a proxy in front of Vast.ai's API acts before
 * the API sees the request. The emulator's own control routes, /healthz and /readyz are never faulted, so a test can
 * always list and clear its rules and a CI step can always see the server is up.
 */
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../../platform/clock.js';
import type { Store } from '../../platform/db/connect.js';
import { referenceForm, requestFaultsServiceFactory, type KnownRoute, type RequestFaultsService } from './request-faults-service.js';

/** What the hook and the routes need of the app's wiring (services.deps). */
export interface RequestFaultsDeps {
  deps: { store: Store; clock: Clock; config: { seed: number } };
}

/** Paths no rule touches (matched on the path without its query): the emulator's controls and the operator's probes. */
const NEVER_FAULTED = /^\/(_emu(\/|$)|healthz\/?$|readyz\/?$|metrics\/?$)/;

/**
 * One service per app, shared by the hook (app.ts) and the routes (routes.ts): both are handed the app's services,
 * and this keeps the rule service beside them without a field in the services' object for an emulator-only part.
 */
const perApp = new WeakMap<object, { service: RequestFaultsService; routes: KnownRoute[] }>();

export function requestFaultsFor(services: RequestFaultsDeps): RequestFaultsService {
  let entry = perApp.get(services);
  if (!entry) {
    const routes: KnownRoute[] = [];
    const { store, clock, config } = services.deps;
    entry = { routes, service: requestFaultsServiceFactory({ db: store.db, clock, seed: config.seed, routes: () => routes }) };
    perApp.set(services, entry);
  }
  return entry.service;
}

/**
 * Installs the hook. Called before the routes are registered: it also learns every route (its method, path and
 * permission category), so that a rule naming a route that does not exist is refused.
 */
export function installRequestFaults(app: FastifyInstance, services: RequestFaultsDeps): void {
  const service = requestFaultsFor(services);
  const routes = perApp.get(services)!.routes;
  app.addHook('onRoute', (route) => {
    if (NEVER_FAULTED.test(route.url)) return;
    for (const method of [route.method].flat()) {
      if (method !== 'HEAD') routes.push({ method, route: referenceForm(route.url), category: route.config?.category });
    }
  });

  // Waits in progress (latency, a timeout's wait): they end early when the app closes, so a close never waits 30 s.
  const waits = new Set<() => void>();
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        waits.delete(done);
        resolve();
      };
      // Real time, not the service clock: latency is what the client waits, and a virtual clock does not pass by itself.
      const timer = setTimeout(done, ms);
      waits.add(done);
    });
  app.addHook('preClose', async () => {
    for (const done of [...waits]) done();
  });

  app.addHook('onRequest', async (request, reply) => {
    const path = request.url.split('?')[0];
    if (NEVER_FAULTED.test(path)) return;
    const url = request.routeOptions.url;
    let decision;
    try {
      decision = await service.decide({
        method: request.method === 'HEAD' ? 'GET' : request.method,
        route: url === undefined ? undefined : referenceForm(url),
        path,
        category: request.routeOptions.config?.category,
      });
    } catch (err) {
      // The rules cannot be read (the database is away): the request goes on, and its route answers as it would.
      request.log.warn({ err }, 'emulator request faults: rules not read');
      return;
    }
    if (decision.latencyMs > 0) await sleep(decision.latencyMs);
    if (decision.drop) {
      // No answer: the connection ends, as when a proxy times out on the client's side.
      request.log.info({ rule: decision.drop.ruleId }, 'emulator request fault: connection dropped');
      // Destroying the response destroys its socket (an injected request, e.g. a scheduled job's, is rejected).
      reply.hijack();
      reply.raw.destroy();
      return reply;
    }
    if (decision.answer) {
      request.log.info({ rule: decision.answer.ruleId, status: decision.answer.status }, 'emulator request fault');
      return reply.status(decision.answer.status).headers(decision.answer.headers).send(decision.answer.body);
    }
  });
}

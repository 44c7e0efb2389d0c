import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { isVirtual } from './platform/clock.js';
import { safeEqual } from './platform/crypto.js';
import { secretToken } from './platform/random.js';
import { Scheduler } from './platform/scheduler.js';
import { installErrorHandling, installReplySending, installJsonParser, RequestLog, typed } from './platform/http.js';
import { installOpenApi, OPENAPI_PATH } from './platform/openapi.js';
import { clientErrorHandler, frameworkErrors, installClosingReply, MAX_PARAM_LENGTH } from './platform/transport-errors.js';
import { lazySchemas } from './platform/lazy-schemas.js';
import { limitConnections, serverTimeouts, type ConnectionCounts } from './platform/connection-limits.js';
import { declaredFields } from './platform/validation.js';
import { createServices, type AppDeps, type Services } from './services.js';
import { registerRoutes } from './routes.js';
import { Metrics } from './ops/ops-metrics.js';
import { installAudit, ipRecorder } from './audit/audit-hook.js';
import { loadConsoleFiles } from './webconsole/console-files.js';
import { consoleFallback, consoleRoutes } from './webconsole/console-routes.js';
import { tunnelsUpgrade } from './tunnels/tunnels-upgrade.js';
import { portsHttp, type PortsHttp } from './ports/ports-http.js';
import { installRecorder } from './emulator/emu-recorder/recorder-hooks.js';
import { installRequestFaults } from './emulator/emu-request-faults/request-faults-hook.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route never reads the service clock: a virtual clock is not reloaded from the database for it (probes). */
    noVirtualClock?: boolean;
  }
}

export type { AppDeps };

const REPLAY_HEADER = 'x-gpuplane-replay';

/** A registered route and its declared access, for tests that sweep every route (auth, permissions). */
export interface RouteInfo {
  method: string;
  url: string;
  category: string | undefined;
  instanceKey: boolean;
  adminOnly: boolean;
  customAuth: boolean;
  /** Served without any credential too (offer search; platform/auth.ts `keyOptional`). */
  keyOptional: boolean;
  /** The body fields the route's schema declares; null when it has no body schema (the body is not read). */
  bodyFields: string[] | null;
}

export interface Built {
  app: FastifyInstance;
  services: Services;
  scheduler: Scheduler;
  routes: RouteInfo[];
  /** Open connections per client address, as the per-address cap counts them (platform/connection-limits.ts). */
  connections: ConnectionCounts;
  /** Compiles every route schema not used yet (they compile on first use); main.ts runs it after listening. */
  compileSchemas(): Promise<void>;
}

/** Builds the HTTP app and its services. main.ts and the tests build it the same way. */
export async function buildApp(deps: AppDeps): Promise<Built> {
  const schemas = lazySchemas();
  const metrics = new Metrics();
  // Each signed-in request's client address (the audit feature; set once the services exist, below).
  let sawRequest: ((request: FastifyRequest) => void) | undefined;
  // Issue 32 (ports): requests to instance port hosts, set once the services exist (below).
  let ports: PortsHttp | undefined;
  const app: FastifyInstance = Fastify({
    schemaController: schemas.schemaController,
    loggerInstance: deps.log as FastifyBaseLogger,
    // One line per request, with the URL redacted, instead of Fastify's own request lines; it also feeds the
    // request metrics.
    logController: new RequestLog((request, reply, ms) => {
      metrics.requestCompleted(request, reply, ms);
      sawRequest?.(request);
    }),
    // Every path is served with and without its trailing slash (contract §3).
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true, maxParamLength: MAX_PARAM_LENGTH },
    // Fastify's and Node's own error replies become the error object too (platform/transport-errors.ts).
    frameworkErrors,
    // A port request's upload may rightly outlast GPUPLANE_REQUEST_TIMEOUT (an app's, not the API's): its timeout passes
    // (src/ports/ports-http.ts says how).
    clientErrorHandler: (err: Error & { code?: string }, socket: Socket) => {
      if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT' && ports?.streaming(socket)) return;
      clientErrorHandler(err, socket);
    },
    return503OnClosing: false,
    // Behind a TLS-terminating proxy (GPUPLANE_TRUST_PROXY): request.protocol follows X-Forwarded-Proto, which decides
    // the session cookie's Secure attribute (login-routes.ts). Off, a client cannot claim https by a header.
    trustProxy: deps.config.trustProxy,
    bodyLimit: 1024 * 1024,
    // How long a request's headers and body may take to arrive (GPUPLANE_HEADERS_TIMEOUT, GPUPLANE_REQUEST_TIMEOUT);
    // the connection caps are set on the server below (platform/connection-limits.ts).
    ...serverTimeouts(deps.config),
    // allowUnionTypes: a union of JSON types (`["number", "string"]`) is meant, not a mistake to warn about.
    // coerceTypes off: platform/validation.ts coerces strictly before Ajv runs (Ajv's own turned `true` into 1).
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: true, allErrors: false, allowUnionTypes: true } },
  });
  const connections = limitConnections(app.server, deps.config, (fields, msg) => deps.log.warn(fields, msg));
  const scheduler = new Scheduler(deps.store, deps.clock, deps.log);
  const services = createServices({ ...deps, scheduler, metrics });

  sawRequest = ipRecorder(services.audit);
  // Before any route: the audited routes get their recording hook as they are registered.
  installAudit(app, services.audit);
  const routes: RouteInfo[] = [];
  app.addHook('onRoute', (route) => {
    // Authentication is each route's own onRequest hook, bound to its config; route hooks run after the global ones
    // (the virtual clock below), as this did when it was one global hook. Public routes get none.
    const authenticate = services.auth.hookFor(route.config);
    // A route whose key may be in its body (`bodyKey`) authenticates once the body is parsed, before it is checked
    // (a request without a valid key is a 401 whatever its body).
    if (authenticate && route.config?.bodyKey) route.preValidation = [authenticate, ...[route.preValidation ?? []].flat()];
    else if (authenticate) route.onRequest = [...[route.onRequest ?? []].flat(), authenticate];
    for (const method of [route.method].flat()) {
      if (method === 'HEAD') continue;
      routes.push({
        method,
        url: route.url,
        category: route.config?.category,
        instanceKey: route.config?.instanceKey === true,
        adminOnly: route.config?.adminOnly === true,
        customAuth: route.config?.customAuth === true,
        keyOptional: route.config?.keyOptional === true,
        bodyFields: route.schema?.body ? declaredFields(route.schema.body) : null,
      });
    }
  });
  app.decorateRequest('principal', null);
  // First of the onRequest hooks: while closing, nothing else runs.
  installClosingReply(app);
  installJsonParser(app);
  // The web console's files (issue 15), when built; its pages answer what no route matched.
  const consoleFiles = loadConsoleFiles(deps.config.consoleDir);
  installErrorHandling(app, consoleFallback(consoleFiles));
  installReplySending(app);
  // A request a scheduled job replays carries this header with this process's value: it runs inside the advance of
  // the virtual clock that runs the job, where any other request waits for the advance to end (Scheduler.advance).
  const replayMark = secretToken(deps.random, '');
  if (isVirtual(deps.clock)) {
    // A virtual clock lives in the database: another process sharing it may have advanced it since.
    // A callback hook: while the database is unchanged (SQLite) there is nothing to wait for, and no promise is made.
    app.addHook('onRequest', (request, _reply, done) => {
      const replayed = request.headers[REPLAY_HEADER];
      const read = request.routeOptions.config.noVirtualClock ? undefined
        : scheduler.restoreVirtualNowIfChanged(typeof replayed === 'string' && safeEqual(replayed, replayMark));
      if (!read) return done();
      read.then(() => done(), done);
    });
  }
  // Issue 34 item 5: every API call appended to GPUPLANE_EMU_RECORD, secrets replaced
  // (src/emulator/emu-recorder/).
  if (deps.config.mode === 'emulator' && deps.config.emuRecord) {
    installRecorder(app, {
      file: deps.config.emuRecord, clock: deps.clock, seed: deps.config.seed, simMachines: deps.config.simMachines,
      skipUrls: [OPENAPI_PATH], replayHeader: REPLAY_HEADER,
    });
  }
  // Issue 34 item 3: faults by API operation (src/emulator/emu-request-faults/), before the routes so it learns them.
  if (deps.config.mode === 'emulator') installRequestFaults(app, services);
  await installOpenApi(app, deps.config.publicUrl);

  await registerRoutes(typed(app), services, deps.config.mode);
  await consoleRoutes(typed(app), { files: consoleFiles });
  // Scheduled jobs replay their requests through the routes, as any client's would be served.
  services.scheduledJobs.useTransport(async (r) => {
    const res = await app.inject({
      method: r.method as 'PUT' | 'POST' | 'DELETE',
      url: r.url,
      headers: { authorization: `Bearer ${r.bearer}`, 'content-type': 'application/json', 'user-agent': 'gpuplane-scheduled-job', [REPLAY_HEADER]: replayMark },
      payload: JSON.stringify(r.body),
    });
    return { status: res.statusCode, body: res.body };
  });

  // Issue 31 (tunnels): the agents' tunnels and the hops between server processes arrive as HTTP upgrades on this port;
  // they are ended (and their holder rows released) before the server and the database close.
  let upgradesClosed = false;
  services.tunnels.useListenAddress(() => app.server.address());
  // Every HTTP upgrade on this port goes to the first handler that takes it (returns true); the tunnels' listener
  // answers the rest (and refuses what nobody serves).
  const upgradeHandlers: ((req: IncomingMessage, socket: Socket, head: Buffer) => boolean)[] = [
    // Issue 32 (ports): WebSockets to an instance port's host name (src/ports/).
    (req, socket, head) => ports!.upgrade(req, socket, head),
    // Issue 32 (terminal): the console's terminal WebSocket (src/terminal/).
    (req, socket, head) => services.terminal.upgrade(req, socket, head),
  ];
  // Issue 32 (ports): a request whose Host is an instance port's (`<id>-<port>.<domain>`) never reaches the router: it
  // goes to the port's app through its host's tunnel (src/ports/). Fastify's own request listener takes the rest.
  ports = portsHttp({ service: services.ports, tunnels: () => services.ports.tunnels(), config: deps.config, log: deps.log });
  const fastifyListeners = app.server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  app.server.removeAllListeners('request');
  app.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (ports!.request(req, res)) return;
    for (const listener of fastifyListeners) listener.call(app.server, req, res);
  });
  app.addHook('onClose', async () => ports!.close());
  const tunnelUpgrades = tunnelsUpgrade(services.tunnels, deps.log, () => upgradesClosed);
  app.server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    for (const take of upgradeHandlers) if (take(req, socket, head)) return;
    tunnelUpgrades(req, socket, head);
  });
  // Issue 32 (terminal): open terminals end (1001) before the tunnels they run through (hooks run in this order).
  app.addHook('preClose', async () => {
    await services.terminal.close();
  });
  app.addHook('preClose', async () => {
    upgradesClosed = true;
    await services.tunnels.close();
  });

  // Issue 31 (gateway): the SSH gateway's listeners and sessions end with the app (it listens only once started:
  // `gpuplane serve` starts it, main.ts; a test app only when its test does).
  app.addHook('preClose', async () => {
    await services.gateway.close();
  });

  app.get(OPENAPI_PATH, { config: { category: 'public' }, schema: { hide: true } }, async () => app.swagger());
  await app.ready();
  return { app, services, scheduler, routes, connections, compileSchemas: schemas.compileAll };
}

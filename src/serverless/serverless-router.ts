/**
 * The autoscaler's routing call, `POST /route/` (docs/spec/client-compat-more.md §e "Routing a request"): the
 * serverless SDK asks for a worker of an endpoint, authenticated with the endpoint's own key. A ready worker is a
 * running instance of one of the endpoint's workergroups that exposes its worker port; the reply carries its address
 * signed with the router's key (serverless-keys.ts). With none ready, the reply has no `url` and the SDK polls again
 * with the `request_idx` it got.
 */
import { isIP } from 'node:net';
import type { Static } from 'typebox';
import type { Clock } from '../platform/clock.js';
import { ApiError } from '../platform/errors.js';
import { digestEqual } from '../platform/crypto.js';
import type { Tx } from '../platform/db/connect.js';
import type { ServerlessKeys } from './serverless-keys.js';
import type { RouteBody, RouteReply } from './serverless-sdk-schemas.js';
import type { EndpointRow, ServerlessStore, WorkerRow } from './serverless-store.js';

/** The pyworker's port inside the container when the instance's env sets no WORKER_PORT (its start_server.sh). */
export const DEFAULT_WORKER_PORT = 3000;
/** The SDK's default workload estimate of one request. */
export const DEFAULT_COST = 100;
/**
 * How long a route reply's `auth_signature` holds (`valid_until`): the SDK sends a request to the worker as soon as
 * it has the reply, and a session reuses it for the session's life, so a worker may allow it this long.
 */
export const ROUTE_SIGNATURE_TTL_S = 3600;

/** A running instance's address (the instances feature's `runningAddresses`). */
export interface WorkerAddress {
  id: number;
  public_ipaddr: string;
  ports: Record<string, { HostIp: string; HostPort: string }[]>;
  env: Record<string, string>;
  /** The machine's declared host port range: a worker's port is routed only from it. */
  direct_port_start: number;
  direct_port_count: number;
  /** On a real host (`gpuplane agent`): its worker is routed only once it reported ready (`reportedReady`). */
  agent?: boolean;
}

export interface RouterInstancesPort {
  runningAddresses(tx: Tx, ids: number[]): Promise<WorkerAddress[]>;
}

/** An IPv4 address a worker can be reached at: not "this network" (0.0.0.0/8), multicast or reserved (224.0.0.0 up). */
function reachable(ip: string): boolean {
  if (isIP(ip) !== 4) return false;
  const first = Number(ip.split('.')[0]);
  return first !== 0 && first < 224;
}

/**
 * `http://IP:PORT` of a worker: the host port of its WORKER_PORT; `none` when that port is not exposed, `refused` when
 * what its host reported cannot be signed (issue 29 item 19: a host had `/route/` sign `http://10.66.66.66:22`).
 * - The port must lie in the machine's declared range: the agent publishes only there (status reports are checked
 *   the same way, agent-server/agent-server-checks.ts; this guards rows stored before that check).
 * - The address is the one the machine registered (checked as an IPv4 literal there), never one from a report. It
 *   is not compared with the address the agent's requests come from: a host behind NAT, or a server behind a proxy,
 *   sees its agent from another address than renters reach it at (the registration's `public_ipaddr` is configured
 *   for that reason). A private address is allowed: self-hosted fleets on one network use them.
 */
export function workerTarget(w: WorkerAddress): { url: string } | 'none' | 'refused' {
  const port = /^[0-9]{1,5}$/.test(w.env.WORKER_PORT ?? '') ? Number(w.env.WORKER_PORT) : DEFAULT_WORKER_PORT;
  const host = w.ports[`${port}/tcp`]?.[0]?.HostPort;
  if (!host) return 'none';
  const hostPort = /^[0-9]{1,5}$/.test(host) ? Number(host) : NaN;
  const inRange = hostPort >= w.direct_port_start && hostPort < w.direct_port_start + w.direct_port_count;
  return inRange && reachable(w.public_ipaddr) ? { url: `http://${w.public_ipaddr}:${hostPort}` } : 'refused';
}

/**
 * Whether a worker may be sent requests by its own reports (serverless-workers.ts): once one says its model is loaded,
 * with no error since. Null when it never reported: a worker on a real host is not routed yet (the pyworker sends its
 * first report a second after it starts, while its model loads); a simulated host's worker runs no pyworker and never
 * reports, and is routed once running.
 */
export function reportedReady(w: Pick<WorkerRow, 'reported_at' | 'loaded' | 'error_msg'>): boolean | null {
  if (w.reported_at === null) return null;
  return w.loaded === 1 && w.error_msg === null;
}

/** Whether a running worker is routed, by its reports (`reportedReady`) and where it runs. */
export function routable(readiness: boolean | null | undefined, onAgent: boolean): boolean {
  return readiness === true || ((readiness === null || readiness === undefined) && !onAgent);
}

/** `http://IP:PORT` of a worker, or null when it is not routed to (`workerTarget`). */
export function workerUrl(w: WorkerAddress): string | null {
  const t = workerTarget(w);
  return typeof t === 'object' ? t.url : null;
}

export function routerFactory({ store, keys, instances, clock }: { store: ServerlessStore; keys: ServerlessKeys; instances: RouterInstancesPort; clock: Pick<Clock, 'now'> }) {
  return {
    /** The live endpoint whose own key was presented, or a 401. */
    async authenticate(presented: string | null): Promise<EndpointRow> {
      if (presented === null) throw new ApiError('auth_error', 'the endpoint\'s API key is required: send "Authorization: Bearer <key>" with the api_key shown with the endpoint');
      const hash = keys.hashOf(presented);
      const ep = await store.endpointByKeyHash(hash);
      if (!ep || !digestEqual(ep.api_key_hash ?? '', hash)) throw new ApiError('auth_error', 'invalid endpoint API key');
      return ep;
    },

    async route(ep: EndpointRow, body: Static<typeof RouteBody>): Promise<Static<typeof RouteReply>> {
      if (ep.endpoint_name !== body.endpoint) throw new ApiError('permission_denied', `this key is not the key of endpoint ${JSON.stringify(body.endpoint)}`);
      const cost = body.cost ?? DEFAULT_COST;
      const requestIdx = body.request_idx || (await store.nextReqnum(ep.id));
      const groups = (await store.workergroupsOf(ep.id)).map((w) => w.id);
      const ids = (await store.workers(groups)).map((w) => w.instance_id);
      const running = await instances.runningAddresses(store.db, ids);
      // A worker that reports (the client's pyworker) is ready once its reports say its model is loaded with no error;
      // on a real host, not before it reported; on a simulated host (no pyworker), once it runs.
      const reports = new Map((await store.liveWorkerRows(ids)).map((r) => [r.instance_id, reportedReady(r)]));
      const ok = (w: WorkerAddress) => routable(reports.get(w.id), w.agent === true);
      const notReady = running.filter((w) => !ok(w)).length;
      const targets = running.filter(ok).map((w) => workerTarget(w));
      const ready = targets.flatMap((t) => (typeof t === 'object' ? [t.url] : []));
      const base = { success: true, endpoint: ep.endpoint_name, cost, request_idx: requestIdx };
      if (ready.length === 0) {
        const refused = targets.filter((t) => t === 'refused').length;
        const why = groups.length === 0
          ? 'the endpoint has no workergroup'
          : running.length === 0
            ? 'no worker is running yet'
            : notReady > 0
              ? `${notReady} running worker(s) have not reported their model loaded yet (or reported an error)`
              : refused > 0
                ? `${refused} running worker(s) have a host address or port outside what their machine declared`
                : `${running.length} running worker(s) expose no worker port (WORKER_PORT, default ${DEFAULT_WORKER_PORT}/tcp): add "-p ${DEFAULT_WORKER_PORT}:${DEFAULT_WORKER_PORT}" to the workergroup's template env`;
        return { ...base, status: 'waiting', msg: `no worker is ready: ${why}; call again with this request_idx` };
      }
      // Round robin over the ready workers, by request.
      const url = ready[requestIdx % ready.length];
      const valid_until = clock.now() + ROUTE_SIGNATURE_TTL_S;
      return {
        ...base, status: 'ready', reqnum: requestIdx, url,
        // What the client's pyworker verifies, and all it verifies: its `__check_signature` (vastai/serverless/server/
        // lib/backend.py) checks exactly json.dumps({"url": url}); signing anything more would make every real worker
        // refuse every request (the client wins). So this alone cannot tell a replay: the same (url, signature) pair
        // works again, at any worker trusting /pubkey/.
        signature: await keys.sign(url),
        // For a worker that can: the same key over the reply's endpoint, request number, cost, URL and `valid_until`
        // (serverless-keys.ts `authSignedText`). A worker that checks it refuses auth_data for another endpoint or
        // address, an altered field, a stale one, and a `reqnum` it already served. The pyworker ignores both keys.
        valid_until,
        auth_signature: await keys.signAuth({ cost, endpoint: ep.endpoint_name, reqnum: requestIdx, request_idx: requestIdx, url, valid_until }),
      };
    },
  };
}

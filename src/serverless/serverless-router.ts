/**
 * The autoscaler's routing call, `POST /route/` (docs/spec/client-compat-more.md §e "Routing a request"): the
 * serverless SDK asks for a worker of an endpoint, authenticated with the endpoint's own key. A ready worker is a
 * running instance of one of the endpoint's workergroups that exposes its worker port; the reply carries its address
 * signed with the router's key (serverless-keys.ts). With none ready, the reply has no `url` and the SDK polls again
 * with the `request_idx` it got.
 */
import type { Static } from 'typebox';
import { ApiError } from '../platform/errors.js';
import { digestEqual } from '../platform/crypto.js';
import type { Tx } from '../platform/db/connect.js';
import type { ServerlessKeys } from './serverless-keys.js';
import type { RouteBody, RouteReply } from './serverless-sdk-schemas.js';
import type { EndpointRow, ServerlessStore } from './serverless-store.js';

/** The pyworker's port inside the container when the instance's env sets no WORKER_PORT (its start_server.sh). */
export const DEFAULT_WORKER_PORT = 3000;
/** The SDK's default workload estimate of one request. */
export const DEFAULT_COST = 100;

/** A running instance's address (the instances feature's `runningAddresses`). */
export interface WorkerAddress {
  id: number;
  public_ipaddr: string;
  ports: Record<string, { HostIp: string; HostPort: string }[]>;
  env: Record<string, string>;
}

export interface RouterInstancesPort {
  runningAddresses(tx: Tx, ids: number[]): Promise<WorkerAddress[]>;
}

/** `http://IP:PORT` of a worker: the host port of its WORKER_PORT, or null when that port is not exposed. */
export function workerUrl(w: WorkerAddress): string | null {
  const port = /^[0-9]{1,5}$/.test(w.env.WORKER_PORT ?? '') ? Number(w.env.WORKER_PORT) : DEFAULT_WORKER_PORT;
  const host = w.ports[`${port}/tcp`]?.[0]?.HostPort;
  return host ? `http://${w.public_ipaddr}:${host}` : null;
}

export function routerFactory({ store, keys, instances }: { store: ServerlessStore; keys: ServerlessKeys; instances: RouterInstancesPort }) {
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
      const running = await instances.runningAddresses(store.db, (await store.workers(groups)).map((w) => w.instance_id));
      const ready = running.map((w) => workerUrl(w)).filter((u): u is string => u !== null);
      const base = { success: true, endpoint: ep.endpoint_name, cost, request_idx: requestIdx };
      if (ready.length === 0) {
        const why = groups.length === 0
          ? 'the endpoint has no workergroup'
          : running.length === 0
            ? 'no worker is running yet'
            : `${running.length} running worker(s) expose no worker port (WORKER_PORT, default ${DEFAULT_WORKER_PORT}/tcp): add "-p ${DEFAULT_WORKER_PORT}:${DEFAULT_WORKER_PORT}" to the workergroup's template env`;
        return { ...base, status: 'waiting', msg: `no worker is ready: ${why}; call again with this request_idx` };
      }
      // Round robin over the ready workers, by request.
      const url = ready[requestIdx % ready.length];
      return { ...base, status: 'ready', reqnum: requestIdx, url, signature: await keys.sign(url) };
    },
  };
}

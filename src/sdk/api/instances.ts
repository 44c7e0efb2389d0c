/** Instances: create (rent an offer), list, show, start/stop/label, destroy, bid, logs, SSH keys (spec; contract §3). */
import type { Static } from 'typebox';
import type {
  AttachSshReply, BidBody, BulkBody, BulkReply, CreateBody, CreateReply, InstanceObject, InstanceReply, InstancesPage, InstancesReply,
  InstanceSshKeysReply, LogsBody, LogsReply, OkReply, HistoryReply,
} from '../../instances/instances-schemas.js';
import type { SuccessReply } from '../../platform/schemas.js';
import { GpuplaneError } from '../errors.js';
import type { Transport } from '../transport.js';

export type CreateInstance = Static<typeof CreateBody>;
export type CreateInstanceReply = Static<typeof CreateReply>;
/** An instance as the API shows it: the typed fields plus everything else the server sends. */
export type Instance = Static<typeof InstanceObject> & Record<string, unknown>;
/** The instance's extra fields are kept in list replies too. */
type WithInstances<R> = Omit<R, 'instances'> & { instances: Instance[] };
type Ok = Static<typeof OkReply>;
type Done = Static<typeof SuccessReply>;
export type InstanceSshKey = Static<typeof InstanceSshKeysReply>['ssh_keys'][number];

/** The server's log URL may name an address it cannot be reached at (e.g. `:0` when it listens on a random port). */
export function reachable(resultUrl: string, base: string): string {
  const u = new URL(resultUrl);
  if (u.port !== '0' && u.hostname !== '0.0.0.0') return resultUrl;
  const b = new URL(base);
  return `${b.origin}${u.pathname}${u.search}`;
}

export function instancesApi(t: Transport) {
  const put = (id: number, body: Record<string, unknown>) => t.request<Ok>('PUT', `/api/v0/instances/${id}/`, { body });
  return {
    /**
     * `PUT /api/v0/asks/{offer_id}/`: rents the offer. An `Idempotency-Key` is sent (pass your own to make a retry of
     * a whole program safe), so a retried request never rents twice.
     */
    create: (offerId: number, body: CreateInstance, opts: { idempotencyKey?: string } = {}) =>
      t.request<CreateInstanceReply>('PUT', `/api/v0/asks/${offerId}/`, { body, idempotent: true, idempotencyKey: opts.idempotencyKey }),
    list: () => t.request<WithInstances<Static<typeof InstancesReply>>>('GET', '/api/v0/instances/'),
    /** `GET /api/v1/instances/`: one page; follow `next_token` with `after_token`. */
    page: (q: { select_filters?: Record<string, unknown>; order_by?: { col: string; dir: 'asc' | 'desc' }[]; limit?: number; after_token?: string } = {}) =>
      t.request<WithInstances<Static<typeof InstancesPage>>>('GET', '/api/v1/instances/', { query: q }),
    show: async (id: number): Promise<Instance> => {
      const r = await t.request<{ instances: (Static<typeof InstanceReply>['instances'] & Instance) | null }>('GET', `/api/v0/instances/${id}/`);
      if (!r.instances) throw new GpuplaneError(404, 'not_found', `instance ${id} not found`);
      return r.instances;
    },
    /** `GET /api/v0/instances/{id}/history/`: the instance's state changes so far, oldest first. */
    history: (id: number) => t.request<Static<typeof HistoryReply>>('GET', `/api/v0/instances/${id}/history/`),
    start: (id: number) => put(id, { state: 'running' }),
    stop: (id: number) => put(id, { state: 'stopped' }),
    label: (id: number, label: string) => put(id, { label }),
    destroy: (id: number) => t.request<Done>('DELETE', `/api/v0/instances/${id}/`, { body: {} }),
    /**
     * `PUT /api/v0/instances/` `{state, ids}`: starts or stops several instances, each on its own. Resolves even when
     * some fail (`success: false`): `ids` lists those changed, `failed` the others with their error and `msg`.
     */
    setState: (ids: number[], state: Static<typeof BulkBody>['state']) =>
      t.request<Static<typeof BulkReply>>('PUT', '/api/v0/instances/', { body: { state, ids } satisfies Static<typeof BulkBody>, checkSuccess: false }),
    changeBid: (id: number, price: number) =>
      t.request<Done>('PUT', `/api/v0/instances/bid_price/${id}/`, { body: { price } satisfies Static<typeof BidBody> }),
    requestLogs: (id: number, body: Static<typeof LogsBody> = {}) =>
      t.request<Static<typeof LogsReply>>('PUT', `/api/v0/instances/request_logs/${id}/`, { body }),
    /** The instance log as text (request_logs, then its `result_url`). */
    logs: async (id: number, body: Static<typeof LogsBody> = {}): Promise<string> => {
      const r = await t.request<Static<typeof LogsReply>>('PUT', `/api/v0/instances/request_logs/${id}/`, { body });
      return t.getText(reachable(r.result_url, t.url));
    },
    attachSsh: (id: number, ssh_key: string) =>
      t.request<Static<typeof AttachSshReply>>('POST', `/api/v0/instances/${id}/ssh/`, { body: { ssh_key } }),
    sshKeys: (id: number) =>
      t.request<Static<typeof InstanceSshKeysReply>>('GET', `/api/v0/instances/${id}/ssh/`),
    detachSsh: (id: number, keyId: number) => t.request<Done>('DELETE', `/api/v0/instances/${id}/ssh/${keyId}/`, { body: {} }),
    /** Issue 32: a new token of the instance port (the old one stops working), shown once, and its URL. */
    portToken: (id: number, port: number) =>
      t.request<{ success: boolean; token: string; url: string }>('POST', `/api/v0/instances/${id}/ports/${port}/token/`, { body: {} }),
  };
}

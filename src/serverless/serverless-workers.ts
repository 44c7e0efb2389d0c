/**
 * The autoscaler's side of the client's own serverless worker (vast-cli's `vastai/serverless/server`, "pyworker") on
 * a real host (issue 33 item 5):
 * - what a rented worker's environment gets from the autoscaler (`workerEnv`): a MASTER_TOKEN of its own, and,
 *   unless its template or deployment names them, REPORT_ADDR (where it reports and fetches `/pubkey/`: this
 *   server's public URL) and WORKER_PORT. The rest it reads are facts of where it runs, set by the host's agent for every container
 *   (src/agent/container-spec.ts `placementEnv`): CONTAINER_ID, PUBLIC_IPADDR and VAST_TCP_PORT_<port>;
 * - its reports (`POST /worker_status/`, `POST /delete_requests/`), authenticated by that token, recorded on its
 *   worker row for the router (a worker that reported is routed only once its model is loaded, without an error) and
 *   for `get_endpoint_workers`.
 */
import type { Static } from 'typebox';
import { digestEqual, sha256Hex } from '../platform/crypto.js';
import { ApiError } from '../platform/errors.js';
import { secretToken, type Random } from '../platform/random.js';
import type { Clock } from '../platform/clock.js';
import { DEFAULT_WORKER_PORT } from './serverless-router.js';
import type { ServerlessStore, WorkerRow } from './serverless-store.js';
import { WORKER_ERROR_MAX, type DeleteRequestsBody, type WorkerReportReply, type WorkerStatusBody } from './serverless-worker-schemas.js';

/** Seconds between writes of a worker's unchanged reports (`reported_at` is that coarse). */
export const REPORT_REWRITE_S = 10;

/** Prefix of a worker's MASTER_TOKEN: told apart from account (`gpk_`) and endpoint (`gpe_`) keys at a glance. */
export const MASTER_TOKEN_PREFIX = 'gpw_';

/** A new worker's token: the token (into its environment) and its SHA-256 (kept on its worker row). */
export function newMasterToken(random: Random): { token: string; hash: string } {
  const token = secretToken(random, MASTER_TOKEN_PREFIX);
  return { token, hash: sha256Hex(token) };
}

/**
 * The variables the autoscaler adds to a worker's creation request, over its template's or deployment's `env`
 * (`given`). A request's keys win over its template's, so what the renter's own env names is kept, not overwritten:
 * WORKER_PORT (the pyworker cannot start without one; the router reads the same default) and REPORT_ADDR (a renter
 * may point its workers elsewhere too: the pyworker takes a comma-separated list; a worker that never reports here is
 * routed as one that runs no pyworker). MASTER_TOKEN is always the autoscaler's: a report is checked against it.
 * @param reportAddr this server's public URL (GPUPLANE_PUBLIC_URL): the pyworker posts to `<REPORT_ADDR>/worker_status/`
 *   and fetches `<REPORT_ADDR>/pubkey/`, routes served at the root.
 */
export function workerEnv(reportAddr: string, token: string, given: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = { MASTER_TOKEN: token };
  if (!('REPORT_ADDR' in given)) env.REPORT_ADDR = reportAddr.replace(/\/+$/, '');
  if (!('WORKER_PORT' in given)) env.WORKER_PORT = String(DEFAULT_WORKER_PORT);
  return env;
}

export function serverlessWorkersFactory({ store, clock }: { store: ServerlessStore; clock: Pick<Clock, 'now'> }) {
  /** The live worker a report names, when its token is the one it was given; else a 401 that says no more. */
  async function authenticate(instanceId: number, mtoken: string): Promise<WorkerRow> {
    const row = await store.liveWorker(instanceId);
    // Compared as digests, in constant time; a worker with no token (rented before 0052) cannot report.
    if (!row || row.mtoken_hash === null || !digestEqual(row.mtoken_hash, sha256Hex(mtoken))) {
      throw new ApiError('auth_error', 'unknown worker, or not its MASTER_TOKEN');
    }
    return row;
  }

  return {
    /**
     * `POST /worker_status/`. The pyworker sends `loadtime` above 0 from the report after its model loaded and
     * benchmarked (and its `/pubkey/` fetched) on, and an `error_msg` once its model or start failed, kept from then
     * on: loaded means both, and an error clears it.
     */
    async workerStatus(body: Static<typeof WorkerStatusBody>): Promise<Static<typeof WorkerReportReply>> {
      const row = await authenticate(body.id, body.mtoken);
      const error = body.error_msg ? body.error_msg.slice(0, WORKER_ERROR_MAX) : null;
      const loaded = error === null && (row.loaded === 1 || (body.loadtime ?? 0) > 0) ? 1 : 0;
      const now = clock.now();
      const report = {
        loaded, error_msg: error, cur_load: body.cur_load ?? 0, max_perf: body.max_perf ?? 0, cur_perf: body.cur_perf ?? 0,
        reported_url: body.url ?? null,
      };
      // A busy worker reports every second: a report that changes nothing is written only every REPORT_REWRITE_S.
      const same = (Object.keys(report) as (keyof typeof report)[]).every((k) => row[k] === report[k]);
      if (!same || row.reported_at === null || now - row.reported_at >= REPORT_REWRITE_S) {
        await store.recordReport(row.instance_id, { ...report, reported_at: now });
      }
      return { success: true, ready: loaded === 1 };
    },

    /**
     * `POST /delete_requests/`: the requests the worker finished. The router keeps no queue of routed requests (a
     * request is handed a worker at once, or polls), so there is nothing to delete: the worker is answered that they
     * are taken, as it needs, and stops resending them.
     */
    async deleteRequests(body: Static<typeof DeleteRequestsBody>): Promise<Static<typeof WorkerReportReply>> {
      await authenticate(body.worker_id, body.mtoken);
      return { success: true, deleted: body.requests.length };
    },
  };
}

export type ServerlessWorkers = ReturnType<typeof serverlessWorkersFactory>;

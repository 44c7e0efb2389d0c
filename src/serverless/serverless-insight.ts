/**
 * What the autoscaler tells about an endpoint (docs/spec/client-compat-more.md §e, "Related autoscaler routes"):
 * `POST /get_endpoint_workers/` lists the endpoint's workers (the instances of its workergroups) in the shape of the
 * serverless SDK's `Worker`; `POST /get_endpoint_logs/` and `/get_autogroup_logs/` give the autoscaler's log, here its
 * recorded decisions, at the four levels the client prints (`info0`, `info1`, `trace`, `debug`).
 */
import type { Static } from 'typebox';
import type { Principal } from '../platform/auth.js';
import { scopeOf } from '../platform/auth.js';
import type { Tx } from '../platform/db/connect.js';
import { ApiError } from '../platform/errors.js';
import type { DecisionRow, ServerlessStore } from './serverless-store.js';
import type { EndpointLogsReply, EndpointWorker } from './serverless-sdk-schemas.js';
import { LOG_DECISIONS_MAX } from './serverless-sdk-schemas.js';

export interface WorkerStatePort {
  workerStates(tx: Tx, ids: number[]): Promise<{ id: number; actual_status: string | null; created_at: number; running_since: number | null; disk: number }[]>;
}

const iso = (t: number) => new Date(t * 1000).toISOString();

/** One decision as a log line at each level: more detail at each. */
function lines(d: DecisionRow): [string, string, string, string] {
  const head = `${iso(d.at)} workergroup ${d.workergroup_id}: ${d.action}`;
  const info1 = `${head} (${d.workers_before} -> ${d.target} workers): ${d.reason}`;
  const trace = `${info1}; instances ${d.instances}`;
  return [head, info1, trace, `${trace}; load ${d.load}`];
}

export function serverlessInsightFactory({ db, store, instances }: { db: Tx; store: ServerlessStore; instances: WorkerStatePort }) {
  async function logs(groups: number[], tail: number | undefined): Promise<Static<typeof EndpointLogsReply>> {
    const rows: DecisionRow[] = [];
    for (const id of groups) rows.push(...(await store.decisions(id, LOG_DECISIONS_MAX)));
    rows.sort((a, b) => a.at - b.at || a.id - b.id);
    const shown = rows.slice(-Math.min(tail ?? LOG_DECISIONS_MAX, LOG_DECISIONS_MAX)).map(lines);
    const level = (i: number) => shown.map((l) => l[i]).join('\n');
    return { success: true, info0: level(0), info1: level(1), trace: level(2), debug: level(3) };
  }

  return {
    async endpointWorkers(principal: Principal, endpointId: number): Promise<Static<typeof EndpointWorker>[]> {
      const ep = await store.endpointInScope(endpointId, scopeOf(principal));
      if (!ep) throw new ApiError('not_found', `endpoint ${endpointId} not found`);
      const groups = (await store.workergroupsOf(ep.id)).map((w) => w.id);
      const workers = await store.workers(groups);
      const ids = workers.map((w) => w.instance_id);
      // A worker's own reports (serverless-workers.ts), when it sends them: its load, measured performance, readiness.
      const reports = new Map((await store.liveWorkerRows(ids)).map((r) => [r.instance_id, r]));
      return (await instances.workerStates(db, ids)).map((i) => {
        const r = reports.get(i.id);
        const reported = r !== undefined && r.reported_at !== null;
        const status = !reported || i.actual_status !== 'running' ? (i.actual_status ?? 'loading') : r.error_msg !== null ? 'error' : r.loaded === 1 ? 'idle' : 'loading';
        return {
          id: i.id,
          status,
          cur_load: reported ? r.cur_load : 0, new_load: 0, cur_load_rolling_avg: 0, cur_perf: reported ? r.cur_perf : 0, perf: reported ? r.max_perf : 0,
          measured_perf: reported ? r.max_perf : 0, dlperf: 0,
          reliability: 1,
          reqs_working: 0,
          disk_usage: 0,
          loaded_at: i.running_since ?? 0,
          started_at: i.created_at,
        };
      });
    },

    async endpointLogs(principal: Principal, endpointId: number, tail?: number) {
      const ep = await store.endpointInScope(endpointId, scopeOf(principal));
      if (!ep) throw new ApiError('not_found', `endpoint ${endpointId} not found`);
      return logs((await store.workergroupsOf(ep.id)).map((w) => w.id), tail);
    },

    async workergroupLogs(principal: Principal, workergroupId: number, tail?: number) {
      const wg = await store.workergroupInScope(workergroupId, scopeOf(principal));
      if (!wg) throw new ApiError('not_found', `workergroup ${workergroupId} not found`);
      return logs([wg.id], tail);
    },
  };
}

export type ServerlessInsight = ReturnType<typeof serverlessInsightFactory>;

/**
 * The simulated autoscaler: one scheduler job per workergroup, every AUTOSCALE_PERIOD_S of service time. Each run
 * decides (serverless-autoscaler.ts), rents or destroys REAL instances through the instances service, marks new
 * workers' charges as serverless, records the decision with its reason, and schedules the next run. Everything
 * happens in the job's transaction (`ctx.tx`): a worker and its decision commit together or not at all.
 */
import { usersContract } from '../users/users-contract.js';
import type { Principal } from '../platform/auth.js';
import type { Tx } from '../platform/db/connect.js';
import { inSavepoint } from '../platform/db/savepoint.js';
import { ApiError } from '../platform/errors.js';
import type { JobContext, Scheduler } from '../platform/scheduler.js';
import type { BillingApi } from '../billing/billing-contract.js';
import type { CreateRequest } from '../instances/instances-contract.js';
import { AUTOSCALE_PERIOD_S, decide, type ScalingSettings } from './serverless-autoscaler.js';
import type { EndpointRow, ServerlessStore, WorkergroupRow } from './serverless-store.js';
import { newMasterToken, workerEnv } from './serverless-workers.js';
import type { Random } from '../platform/random.js';

export const AUTOSCALE_JOB = 'serverless.autoscale';
export const workergroupRef = (id: number) => `workergroup:${id}`;
/** Offers looked at beyond the number of workers wanted, in case some are taken meanwhile. */
const SPARE_OFFERS = 5;

/** What the autoscaler needs from the instances feature: its service calls that take the caller's transaction. */
export interface ScalerInstancesPort {
  createIn(tx: Tx, principal: Principal, offerId: number, body: CreateRequest): Promise<{ new_contract: number }>;
  destroyIn(tx: Tx, principal: Principal, id: number): Promise<unknown>;
  /** Those of `ids` not destroyed. */
  liveIds(tx: Tx, ids: number[]): Promise<number[]>;
}

/** Offer search inside a transaction: `{id}` of the best offers for a filter body, best first. */
export type OffersInTx = (tx: Tx, filter: Record<string, unknown>, limit: number) => Promise<{ id: number }[]>;

export interface ScalerDeps {
  store: ServerlessStore;
  scheduler: Scheduler;
  billing: Pick<BillingApi, 'setServerlessGroup'>;
  instances: ScalerInstancesPort;
  offersIn: OffersInTx;
  /** What a workergroup's new workers run when it is not its template (a deployment's current version). */
  launchOf(tx: Tx, wg: WorkergroupRow): Promise<CreateRequest | undefined>;
  /** A team's owner now (undefined: the team is gone); from the teams store. */
  teamOwner(tx: Tx, teamId: number): Promise<number | undefined>;
  /** Makes each worker's MASTER_TOKEN. */
  random: Random;
  /** Where workers report (REPORT_ADDR): this server's public URL. */
  reportAddr: string;
  /** The `env` of a template as a creation request receives it (object form), or {} when it is gone. */
  templateEnv(tx: Tx, owner: Principal, hashId: string): Promise<Record<string, string>>;
}

export function settingsOf(ep: EndpointRow, wg: WorkergroupRow): ScalingSettings {
  return {
    min_load: wg.min_load ?? ep.min_load,
    target_util: wg.target_util ?? ep.target_util,
    cold_mult: wg.cold_mult ?? ep.cold_mult,
    cold_workers: wg.cold_workers ?? ep.cold_workers,
    max_workers: wg.max_workers ?? ep.max_workers,
  };
}

/** A failed rent or destroy rolls back only itself, not the decision or other workers. */
const attempt = inSavepoint;

export function scalerFactory({ store, scheduler, billing, instances, offersIn, launchOf, teamOwner, random, reportAddr, templateEnv }: ScalerDeps) {
  /**
   * The owner acting: the autoscaler rents and destroys in the workergroup's scope, as its owner would. A team's
   * workergroup is the team's, so it acts as the team's owner now, whoever made it (issue 29 item 17): the member who
   * made it, once removed, pays for nothing of it; rows made before that rule still name the member in `user_id`. A
   * workergroup of a team that is gone rents nothing.
   */
  async function ownerOf(tx: Tx, wg: WorkergroupRow): Promise<Principal | undefined> {
    const accountId = wg.team_id === null ? wg.user_id : await teamOwner(tx, wg.team_id);
    if (accountId === undefined) return undefined;
    const user = await usersContract.byId(tx, accountId);
    if (!user) return undefined;
    const key = { id: 0, user_id: user.id, team_id: wg.team_id, kind: 'autoscaler', instance_id: null, permissions: null } as unknown as Principal['key'];
    return { user, key, permissions: null, teamId: wg.team_id, presentedKey: '', accountId };
  }

  /** Workers still alive; one destroyed by its owner directly is released here and no longer counts. */
  async function liveWorkers(tx: Tx, wg: WorkergroupRow, at: number): Promise<number[]> {
    const ids = (await store.workers([wg.id], tx)).map((w) => w.instance_id);
    if (ids.length === 0) return [];
    const alive = new Set(await instances.liveIds(tx, ids));
    for (const id of ids) if (!alive.has(id)) await store.releaseWorker(id, at, tx);
    return ids.filter((id) => alive.has(id));
  }

  async function scaleUp(tx: Tx, owner: Principal, ep: EndpointRow, wg: WorkergroupRow, count: number, at: number): Promise<{ rented: number[]; note: string }> {
    const offers = await offersIn(tx, JSON.parse(wg.search_filter) as Record<string, unknown>, count + SPARE_OFFERS);
    const rented: number[] = [];
    const label = `endpoint ${ep.id} workergroup ${wg.id}`;
    const launch = await launchOf(tx, wg);
    const body: CreateRequest = launch ? { ...launch, label } : { template_hash_id: wg.template_hash, label };
    if (wg.launch_args) body.args_str = wg.launch_args;
    // The env the request's own keys go over (its template's when it names one): WORKER_PORT is added if it has none.
    const requestEnv = (body.env ?? {}) as Record<string, string>;
    const given = { ...(body.template_hash_id ? await templateEnv(tx, owner, body.template_hash_id) : {}), ...requestEnv };
    let lastError = '';
    // An offer is a bundle size on a machine: it can be rented again while the machine has free GPUs.
    for (const offer of offers) {
      while (rented.length < count) {
        // Each worker its own MASTER_TOKEN (kept as its digest): a worker reports only as itself.
        const mtoken = newMasterToken(random);
        const workerBody: CreateRequest = { ...body, env: { ...requestEnv, ...workerEnv(reportAddr, mtoken.token, given) } };
        const got = await attempt(tx, () => instances.createIn(tx, owner, offer.id, workerBody));
        if (got instanceof ApiError) {
          lastError = got.message;
          break;
        }
        const id = got.new_contract;
        await store.addWorker(wg.id, id, at, tx, mtoken.hash);
        await billing.setServerlessGroup(tx, `instance-${id}`, { endpointId: ep.id, workergroupId: wg.id });
        rented.push(id);
      }
    }
    const note = rented.length < count
      ? `; rented ${rented.length} of ${count}: ${offers.length === 0 ? 'no offer matches search_params' : `offers ran out${lastError ? ` (${lastError})` : ''}`}`
      : '';
    return { rented, note };
  }

  /** Destroys workers (newest first) and marks them released; one already gone is released all the same. */
  async function release(tx: Tx, owner: Principal | undefined, ids: number[], at: number): Promise<void> {
    for (const id of ids) {
      if (owner) await attempt(tx, () => instances.destroyIn(tx, owner, id));
      await store.releaseWorker(id, at, tx);
    }
  }

  /** One autoscaler run for a workergroup (the job handler). */
  async function tick(payload: { workergroup_id: number }, ctx: JobContext): Promise<void> {
    const { tx } = ctx;
    const at = ctx.now;
    const wg = await store.workergroup(payload.workergroup_id, tx);
    const ep = wg && (await store.endpoint(wg.endpoint_id, tx));
    if (!wg || !ep) return;
    const owner = await ownerOf(tx, wg);
    if (!owner) return;
    const workers = await liveWorkers(tx, wg, at);
    const { target, reason } = ep.endpoint_state === 'stopped'
      ? { target: 0, reason: `endpoint ${ep.id} is stopped (start it to scale again)` }
      : decide(ep.load, settingsOf(ep, wg));
    let action = 'hold';
    let changed: number[] = [];
    let note = '';
    if (target > workers.length) {
      const up = await scaleUp(tx, owner, ep, wg, target - workers.length, at);
      changed = up.rented;
      note = up.note;
      action = 'scale_up';
    } else if (target < workers.length) {
      changed = workers.slice(target).reverse();
      await release(tx, owner, changed, at);
      action = 'scale_down';
    }
    await store.insertDecision(
      { workergroup_id: wg.id, at, load: ep.load, workers_before: workers.length, target, action, reason: `${reason} → ${target} worker(s)${note}`, instances: JSON.stringify(changed) },
      tx,
    );
    await scheduler.schedule(AUTOSCALE_JOB, ctx.dueAt + AUTOSCALE_PERIOD_S, payload, { tx, ref: workergroupRef(wg.id) });
  }

  /**
   * Replaces a workergroup's workers (`POST /update_workers/`, after a deployment's new version): they are destroyed
   * now and the autoscaler's run, due at once, rents new ones with what the workergroup launches now.
   */
  async function replaceWorkers(tx: Tx, wg: WorkergroupRow, at: number): Promise<number[]> {
    const ids = (await store.workers([wg.id], tx)).map((w) => w.instance_id);
    await release(tx, await ownerOf(tx, wg), [...ids].reverse(), at);
    await store.insertDecision({ workergroup_id: wg.id, at, load: 0, workers_before: ids.length, target: 0, action: 'release', reason: 'update_workers: workers replaced with the current version', instances: JSON.stringify(ids) }, tx);
    await scheduler.cancel(workergroupRef(wg.id), { tx, kind: AUTOSCALE_JOB });
    await scheduler.schedule(AUTOSCALE_JOB, at, { workergroup_id: wg.id }, { tx, ref: workergroupRef(wg.id) });
    return ids;
  }

  /** Stops a workergroup's autoscaler and destroys its workers (workergroup or endpoint deleted). */
  async function retire(tx: Tx, wg: WorkergroupRow, at: number, why: string): Promise<void> {
    await scheduler.cancel(workergroupRef(wg.id), { tx, kind: AUTOSCALE_JOB });
    const ids = (await store.workers([wg.id], tx)).map((w) => w.instance_id);
    await release(tx, await ownerOf(tx, wg), [...ids].reverse(), at);
    await store.updateWorkergroup(wg.id, { deleted_at: at }, tx);
    await store.insertDecision({ workergroup_id: wg.id, at, load: 0, workers_before: ids.length, target: 0, action: 'release', reason: why, instances: JSON.stringify(ids) }, tx);
  }

  /** The workergroup's next autoscaler run is due now (its endpoint was stopped or started). */
  async function runNow(tx: Tx, workergroupId: number, at: number): Promise<void> {
    await scheduler.cancel(workergroupRef(workergroupId), { tx, kind: AUTOSCALE_JOB });
    await scheduler.schedule(AUTOSCALE_JOB, at, { workergroup_id: workergroupId }, { tx, ref: workergroupRef(workergroupId) });
  }

  scheduler.register(AUTOSCALE_JOB, tick);
  return { tick, retire, replaceWorkers, runNow, settingsOf };
}

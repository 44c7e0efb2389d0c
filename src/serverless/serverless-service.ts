/**
 * Serverless endpoints (`/api/v0/endptjobs/`) and workergroups (`/api/v0/autojobs/`): the spec's creation defaults,
 * the client's bodies (every key present, null meaning "not given"), and the simulated autoscaler
 * (serverless-scaler.ts) that keeps each workergroup's real instances following the endpoint's load.
 */
import type { Static } from 'typebox';
import { scopeOf, type Principal, type Scope } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import type { SecretBox } from '../platform/crypto.js';
import type { Random } from '../platform/random.js';
import type { Store, Tx } from '../platform/db/connect.js';
import { ApiError, badRequest } from '../platform/errors.js';
import { checkEchoedId } from '../platform/validation.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { BillingApi } from '../billing/billing-contract.js';
import type { CreateRequest, TemplatesPort } from '../instances/instances-contract.js';
import { parseFilterBody, type FieldTable } from '../offers/offers-contract.js';
import { AUTOSCALE_JOB, scalerFactory, settingsOf, workergroupRef, type OffersInTx, type ScalerInstancesPort } from './serverless-scaler.js';
import { parseSearchParams } from './serverless-query.js';
import { ENDPOINT_SETTABLE, type DecisionObject, type EndpointBody, type EndpointObject, type WorkergroupObject, type EndpointUpdateBody, type WorkergroupSdkBody, type WorkergroupUpdateBody } from './serverless-schemas.js';
import { serverlessStore, type EndpointRow, type WorkergroupRow } from './serverless-store.js';
import { serverlessKeysFactory } from './serverless-keys.js';
import { routerFactory, type RouterInstancesPort } from './serverless-router.js';
import { serverlessWorkersFactory } from './serverless-workers.js';
import { parseDockerEnv } from '../templates/templates-contract.js';
import { serverlessInsightFactory, type WorkerStatePort } from './serverless-insight.js';
import { blobStore } from './serverless-blob.js';
import { deploymentsFactory } from './serverless-deployments.js';
import { checkSettings, type Settings } from './serverless-settings.js';

/** Spec "Create serverless endpoint" defaults. */
export const ENDPOINT_DEFAULTS = { min_load: 10, min_cold_load: 0, target_util: 0.9, cold_mult: 2.5, cold_workers: 5, max_workers: 20, endpoint_name: 'default-endpoint' } as const;
export const DECISIONS_SHOWN = 100;

export interface ServerlessDeps {
  store: Store;
  clock: Clock;
  random: Random;
  /** Seals endpoint keys, the router's signing key and registry logins. */
  secretBox: SecretBox;
  scheduler: Scheduler;
  billing: Pick<BillingApi, 'setServerlessGroup'>;
  instances: ScalerInstancesPort & RouterInstancesPort & WorkerStatePort;
  /** `GPUPLANE_BLOB_STORE_URL`: where deployment tarballs go; undefined refuses uploads (serverless-blob.ts). */
  blobStoreUrl?: string;
  templates: Pick<TemplatesPort, 'getForCreate'>;
  offersIn: OffersInTx;
  /** The offers' field table, to validate a workergroup's search query strictly. */
  offerFields: FieldTable<any, any>;
  /** A team's owner (undefined: no such team): the account a team's workergroups rent as (serverless-scaler.ts). */
  teamOwner(tx: Tx, teamId: number): Promise<number | undefined>;
  /** This server's public URL (GPUPLANE_PUBLIC_URL): the REPORT_ADDR workers report to (serverless-workers.ts). */
  reportAddr: string;
}

const given = <T>(v: T | null | undefined): v is T => v !== null && v !== undefined;
type EndpointUpdate = Static<typeof EndpointUpdateBody>;
type WorkergroupUpdate = Static<typeof WorkergroupUpdateBody>;
const WORKERGROUP_SETTINGS = ['min_load', 'target_util', 'cold_mult', 'cold_workers', 'max_workers'] as const;


export function serverlessServiceFactory(deps: ServerlessDeps) {
  const { store, clock, scheduler } = deps;
  const sls = serverlessStore(store.db, store.dialect);
  const keys = serverlessKeysFactory({ db: store.db, random: deps.random, secretBox: deps.secretBox });
  const tx = <T>(fn: (t: Tx) => Promise<T>) => store.db.transaction().execute(fn);
  // Filled in below: a deployment's workergroup launches its current version (serverless-deployments.ts).
  let deploymentLaunch: ((t: Tx, wg: WorkergroupRow) => Promise<CreateRequest | undefined>) | undefined;
  const scaler = scalerFactory({
    store: sls, scheduler, billing: deps.billing, instances: deps.instances, offersIn: deps.offersIn, teamOwner: deps.teamOwner,
    random: deps.random, reportAddr: deps.reportAddr,
    templateEnv: async (t, owner, hashId) => {
      const template = await deps.templates.getForCreate(hashId, scopeOf(owner), t);
      // Checked when the template was saved; one unreadable now fails its rent with the instances' own message.
      try { return parseDockerEnv(template?.env); } catch { return {}; }
    },
    launchOf: (t, wg) => (wg.deployment_id !== null && deploymentLaunch ? deploymentLaunch(t, wg) : Promise.resolve(undefined)),
  });
  const router = routerFactory({ store: sls, keys, instances: deps.instances, clock });
  const workers = serverlessWorkersFactory({ store: sls, clock });
  const insight = serverlessInsightFactory({ db: store.db, store: sls, instances: deps.instances });

  /**
   * The offer filter of a workergroup's `search_params`: the vastai query string, or (from the serverless SDK) the
   * filter object itself. Validated by the offers' own parser now: a workergroup never fails later on its query.
   */
  function searchFilter(searchParams: string | Record<string, unknown>): Record<string, unknown> {
    const filter = typeof searchParams === 'string' ? parseSearchParams(searchParams) : searchParams;
    parseFilterBody(filter, deps.offerFields, { maxLimit: 1 });
    return filter;
  }

  /** The endpoint's key in clear; an endpoint made before 0025 gets one now. */
  async function endpointKey(e: EndpointRow): Promise<string> {
    let row = e;
    if (row.api_key_sealed === null) {
      const k = keys.newEndpointKey();
      row = await sls.setEndpointKeyIfNone(e.id, k.hash, k.sealed);
    }
    const key = keys.openEndpointKey(row.api_key_sealed!);
    if (key === null) throw new Error(`endpoint ${e.id}: its key was sealed with another secret key (GPUPLANE_SECRET_KEY changed)`);
    return key;
  }

  async function endpointObject(e: EndpointRow, workers: number): Promise<Static<typeof EndpointObject>> {
    const { deleted_at: _d, api_key_hash: _h, api_key_sealed: _s, reqnum: _r, ...rest } = e;
    return { ...rest, workers, api_key: await endpointKey(e), auto_delete_in_seconds: null, auto_delete_due_24h: false };
  }

  const workerCount = async (endpointId: number, t: Tx = store.db) => (await sls.workers((await sls.workergroupsOf(endpointId, t)).map((w) => w.id), t)).length;

  /** A new endpoint row of `scope`: the spec's defaults under the given settings, and its own key. */
  async function insertEndpoint(t: Tx, scope: Scope, body: Static<typeof EndpointBody>): Promise<number> {
    const d = ENDPOINT_DEFAULTS;
    const key = keys.newEndpointKey();
    const row = {
      user_id: scope.userId, team_id: scope.teamId, endpoint_name: body.endpoint_name ?? d.endpoint_name,
      min_load: body.min_load ?? d.min_load, min_cold_load: body.min_cold_load ?? d.min_cold_load, target_util: body.target_util ?? d.target_util,
      cold_mult: body.cold_mult ?? d.cold_mult, cold_workers: body.cold_workers ?? d.cold_workers, max_workers: body.max_workers ?? d.max_workers,
      max_queue_time: body.max_queue_time ?? null, target_queue_time: body.target_queue_time ?? null, inactivity_timeout: body.inactivity_timeout ?? null,
      load: 0, created_at: clock.now(), deleted_at: null, api_key_hash: key.hash, api_key_sealed: key.sealed, reqnum: 0,
    };
    checkSettings(body, row);
    return sls.insertEndpoint(row, t);
  }

  /** Deletes an endpoint: every workergroup's instances are destroyed in the caller's transaction. */
  async function retireEndpoint(t: Tx, id: number, now: number, why: string): Promise<void> {
    for (const wg of await sls.workergroupsOf(id, t)) await scaler.retire(t, wg, now, why);
    await sls.updateEndpoint(id, { deleted_at: now }, t);
  }

  const deployments = deploymentsFactory({
    store, clock, scheduler, secretBox: deps.secretBox, sls, scaler, searchFilter, insertEndpoint, retireEndpoint, workerCount,
    blob: deps.blobStoreUrl ? blobStore(deps.blobStoreUrl) : undefined,
  });
  deploymentLaunch = deployments.launchOf;

  async function workergroupObject(wg: WorkergroupRow, ep: EndpointRow | undefined, t: Tx = store.db): Promise<Static<typeof WorkergroupObject>> {
    const workers = (await sls.workers([wg.id], t)).map((w) => w.instance_id);
    const { deleted_at: _d, search_filter, ...rest } = wg;
    return { ...rest, endpoint_name: ep?.endpoint_name ?? null, search_query: JSON.parse(search_filter), effective: ep ? settingsOf(ep, wg) : null, workers };
  }

  return {
    scaler,
    router,
    /** The client's own worker's reports (serverless-workers.ts). */
    workers,
    /** The autoscaler's worker list and log (serverless-insight.ts). */
    insight,
    deployments,
    /** The router's public key, PEM (`GET /pubkey/`). */
    publicKey: () => keys.publicPem(),

    async createEndpoint(principal: Principal, body: Static<typeof EndpointBody>) {
      return { success: true as const, result: await insertEndpoint(store.db, scopeOf(principal), body) };
    },

    async listEndpoints(principal: Principal) {
      const rows = await sls.endpointsInScope(scopeOf(principal));
      const results = [];
      for (const e of rows) results.push(await endpointObject(e, await workerCount(e.id)));
      return { success: true as const, results };
    },

    /** One endpoint (the serverless SDK's fetch_endpoint). */
    async getEndpoint(principal: Principal, id: number) {
      const e = await sls.endpointInScope(id, scopeOf(principal));
      if (!e) throw new ApiError('not_found', `endpoint ${id} not found`);
      return { success: true as const, result: await endpointObject(e, await workerCount(e.id)) };
    },

    async updateEndpoint(principal: Principal, id: number, body: EndpointUpdate) {
      checkEchoedId(body.endptjob_id, id, 'endptjob_id');
      return tx(async (t) => {
        const e = await sls.endpointInScope(id, scopeOf(principal), t, true);
        if (!e) throw new ApiError('not_found', `endpoint ${id} not found`);
        // Only the settable fields, by an explicit list: the body is never copied onto the row by its keys.
        const set: Partial<Pick<EndpointRow, (typeof ENDPOINT_SETTABLE)[number]>> = {};
        for (const k of ENDPOINT_SETTABLE) if (given(body[k])) (set as Record<string, unknown>)[k] = body[k];
        checkSettings(set, { ...e, ...set } as EndpointRow);
        if (Object.keys(set).length) await sls.updateEndpoint(id, set, t);
        return { success: true as const, msg: `endpoint ${id} updated` };
      });
    },

    /** Deleting an endpoint releases its workers: every workergroup's instances are destroyed in the same transaction. */
    async deleteEndpoint(principal: Principal, id: number) {
      return tx(async (t) => {
        const e = await sls.endpointInScope(id, scopeOf(principal), t, true);
        if (!e) throw new ApiError('not_found', `endpoint ${id} not found`);
        const running = (await sls.workergroupsOf(id, t)).find((w) => w.deployment_id !== null);
        if (running) throw new ApiError('conflict', `endpoint ${id} runs deployment ${running.deployment_id}: delete the deployment instead`);
        await retireEndpoint(t, id, clock.now(), `endpoint ${id} deleted: workers released`);
        return { success: true as const, msg: `endpoint ${id} deleted` };
      });
    },

    /** The emulator's load setting: what the autoscaler follows from its next run. */
    async setLoad(id: number, load: number) {
      const e = await sls.endpoint(id);
      if (!e) throw new ApiError('not_found', `endpoint ${id} not found`);
      await sls.updateEndpoint(id, { load });
      return { success: true as const, load };
    },

    /** `POST /autojobs/` (vastai) and `POST /workergroups/` (the serverless SDK, whose search_params may be a filter object). */
    async createWorkergroup(principal: Principal, body: Static<typeof WorkergroupSdkBody>) {
      const scope = scopeOf(principal);
      if (!given(body.template_hash) || body.template_hash === '') {
        throw badRequest(given(body.template_id) ? 'template_hash is required (the template\'s hash_id); template_id alone is not accepted' : 'template_hash is required');
      }
      const template = await deps.templates.getForCreate(body.template_hash, scope);
      if (!template) throw new ApiError('not_found', `template ${JSON.stringify(body.template_hash)} not found`);
      const filter = searchFilter(body.search_params ?? '');
      // Kept as given: the query string, or the filter object's JSON.
      const searchParams = typeof body.search_params === 'object' && body.search_params !== null ? JSON.stringify(body.search_params) : body.search_params ?? '';
      return tx(async (t) => {
        const ep = given(body.endpoint_id)
          ? await sls.endpointInScope(body.endpoint_id, scope, t, true)
          : given(body.endpoint_name) ? await sls.endpointByName(body.endpoint_name, scope, t) : undefined;
        if (!ep) throw new ApiError('not_found', given(body.endpoint_id) || given(body.endpoint_name) ? 'endpoint not found' : 'endpoint_id or endpoint_name is required');
        const s: Settings = { min_load: body.min_load, target_util: body.target_util, cold_mult: body.cold_mult, cold_workers: body.cold_workers, max_workers: body.max_workers };
        checkSettings(s, { cold_workers: s.cold_workers ?? ep.cold_workers, max_workers: s.max_workers ?? ep.max_workers });
        const now = clock.now();
        const id = await sls.insertWorkergroup({
          endpoint_id: ep.id, user_id: scope.userId, team_id: scope.teamId, template_hash: template.hash_id, search_params: searchParams,
          search_filter: JSON.stringify(filter), launch_args: body.launch_args ?? null,
          gpu_ram: body.gpu_ram ?? null, min_load: s.min_load ?? null, target_util: s.target_util ?? null,
          cold_mult: s.cold_mult ?? null, cold_workers: s.cold_workers ?? null, max_workers: s.max_workers ?? null,
          test_workers: body.test_workers ?? null, created_at: now, deleted_at: null,
        }, t);
        // The first autoscaler run is due at once; it reschedules itself.
        await scheduler.schedule(AUTOSCALE_JOB, now, { workergroup_id: id }, { tx: t, ref: workergroupRef(id) });
        return { success: true as const, id };
      });
    },

    async listWorkergroups(principal: Principal) {
      const results = [];
      for (const wg of await sls.workergroupsInScope(scopeOf(principal))) results.push(await workergroupObject(wg, await sls.endpoint(wg.endpoint_id)));
      return { success: true as const, results };
    },

    async updateWorkergroup(principal: Principal, id: number, body: WorkergroupUpdate) {
      checkEchoedId(body.autojob_id, id, 'autojob_id');
      const searchParams = body.search_params;
      const query = given(searchParams) ? { search_params: searchParams, search_filter: JSON.stringify(searchFilter(searchParams)) } : {};
      return tx(async (t) => {
        const wg = await sls.workergroupInScope(id, scopeOf(principal), t, true);
        const ep = wg && (await sls.endpoint(wg.endpoint_id, t));
        if (!wg || !ep) throw new ApiError('not_found', `workergroup ${id} not found`);
        const s: Settings = Object.fromEntries(WORKERGROUP_SETTINGS.filter((k) => given(body[k])).map((k) => [k, body[k]]));
        checkSettings(s, { cold_workers: s.cold_workers ?? wg.cold_workers ?? ep.cold_workers, max_workers: s.max_workers ?? wg.max_workers ?? ep.max_workers });
        const set = {
          ...s,
          ...(given(body.test_workers) ? { test_workers: body.test_workers } : {}),
          ...query,
        };
        // An update that names no known field changes nothing (an empty UPDATE is not valid SQL).
        if (Object.keys(set).length) await sls.updateWorkergroup(id, set, t);
        return { success: true as const, msg: `workergroup ${id} updated` };
      });
    },

    async deleteWorkergroup(principal: Principal, id: number) {
      return tx(async (t) => {
        const wg = await sls.workergroupInScope(id, scopeOf(principal), t, true);
        if (!wg) throw new ApiError('not_found', `workergroup ${id} not found`);
        if (wg.deployment_id !== null) throw new ApiError('conflict', `workergroup ${id} runs deployment ${wg.deployment_id}: delete the deployment instead`);
        await scaler.retire(t, wg, clock.now(), `workergroup ${id} deleted: workers released`);
        return { success: true as const, msg: `workergroup ${id} deleted` };
      });
    },

    /** The autoscaler's decisions for a workergroup, newest first. */
    async decisions(principal: Principal, id: number) {
      const wg = await sls.workergroupInScope(id, scopeOf(principal));
      if (!wg) throw new ApiError('not_found', `workergroup ${id} not found`);
      const rows = await sls.decisions(id, DECISIONS_SHOWN);
      return { success: true as const, decisions: rows.map((r): Static<typeof DecisionObject> => ({ ...r, instances: JSON.parse(r.instances) as number[] })) };
    },
  };
}

export type ServerlessService = ReturnType<typeof serverlessServiceFactory>;

/**
 * Deployments (docs/spec/client-compat-more.md §e "Deployments"): the serverless SDK's `PUT /api/v0/deployments/`
 * names a deployment (name and tag), its image, its code (a tarball by hash and size) and its autoscaling. gpuplane
 * keeps one endpoint and one workergroup per deployment; the workergroup's workers run the deployment's current
 * version (its image and env, plus IS_DEPLOYMENT and DEPLOYMENT_ID for the SDK's bootstrap script). Each new tarball
 * is a new version; the tarball itself goes to the blob store (serverless-blob.ts), which the client uploads to
 * directly. Without a blob store, anything that needs a new tarball is refused with 503 `service_unavailable`.
 */
import type { Static } from 'typebox';
import { scopeOf, type Principal, type Scope } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import type { SecretBox } from '../platform/crypto.js';
import type { Store, Tx } from '../platform/db/connect.js';
import { ApiError, badRequest } from '../platform/errors.js';
import type { JobContext, Scheduler } from '../platform/scheduler.js';
import type { CreateRequest } from '../instances/instances-contract.js';
import { EnvParseError, parseDockerEnv } from '../templates/templates-contract.js';
import type { BlobStore } from './serverless-blob.js';
import { deploymentsStore, type DeploymentRow, type VersionRow } from './serverless-deployments-store.js';
import { AUTOSCALE_JOB, workergroupRef, type scalerFactory } from './serverless-scaler.js';
import type { EndpointState } from './serverless-tables.js';
import type { EndpointBody } from './serverless-schemas.js';
import { DEFAULT_TAG, type DeleteByNameBody, type DeploymentObject, type DeploymentPutBody, type DeploymentPutReply, type VersionObject } from './serverless-sdk-schemas.js';
import { checkSettings } from './serverless-settings.js';
import type { ServerlessStore, WorkergroupRow } from './serverless-store.js';

/** Versions a deployment keeps; older ones are dropped (`evicted_versions`), never the current one. */
export const MAX_DEPLOYMENT_VERSIONS = 10;
/** The SDK's default worker disk, GB (DeploymentData.storage). */
export const DEFAULT_DEPLOYMENT_STORAGE_GB = 50;
export const DEPLOYMENT_TTL_JOB = 'serverless.deployment_ttl';
const ttlRef = (id: number) => `deployment:${id}`;

const MISSING_BLOB_STORE =
  'this server has no blob store for deployment tarballs: set GPUPLANE_BLOB_STORE_URL (an S3-compatible bucket) to create deployments or change their code';

/** The endpoint scaling fields a deployment body may carry (the endpoint's own). */
const SCALING = ['cold_workers', 'max_workers', 'min_load', 'min_cold_load', 'target_util', 'cold_mult', 'max_queue_time', 'target_queue_time', 'inactivity_timeout'] as const;

type PutBody = Static<typeof DeploymentPutBody>;
type Scaler = ReturnType<typeof scalerFactory>;

export interface DeploymentsDeps {
  store: Store;
  clock: Clock;
  scheduler: Scheduler;
  secretBox: SecretBox;
  sls: ServerlessStore;
  scaler: Scaler;
  blob: BlobStore | undefined;
  searchFilter(searchParams: string): Record<string, unknown>;
  insertEndpoint(t: Tx, scope: Scope, body: Static<typeof EndpointBody>): Promise<number>;
  retireEndpoint(t: Tx, id: number, now: number, why: string): Promise<void>;
  workerCount(endpointId: number, t?: Tx): Promise<number>;
}

const given = <T>(v: T | null | undefined): v is T => v !== null && v !== undefined;

/** Another request created the same deployment first (PostgreSQL: the unique index); `put` runs again and finds it. */
class RaceLost extends Error {}

function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === '23505';
}

/** The registry login as the instances feature reads `image_login`: `-u USER -p PASS REPO`. */
function imageLogin(b: PutBody): string | null {
  if (!given(b.docker_login_user) && !given(b.docker_login_pass) && !given(b.docker_login_repo)) return null;
  return [b.docker_login_user ? `-u ${b.docker_login_user}` : '', b.docker_login_pass ? `-p ${b.docker_login_pass}` : '', b.docker_login_repo ?? '']
    .filter(Boolean).join(' ');
}

export function deploymentsFactory(deps: DeploymentsDeps) {
  const { store, clock, scheduler, secretBox, sls, scaler } = deps;
  const ds = deploymentsStore(store.db, store.dialect);
  const tx = <T>(fn: (t: Tx) => Promise<T>) => store.db.transaction().execute(fn);

  const s3Key = (deploymentId: number, fileHash: string) => `deployments/${deploymentId}/${fileHash}.tar.gz`;

  function needBlob(): BlobStore {
    if (!deps.blob) throw new ApiError('service_unavailable', MISSING_BLOB_STORE);
    return deps.blob;
  }

  /** The version row a body describes (its code, image and launch). */
  function versionOf(b: PutBody, deploymentId: number, now: number) {
    const login = imageLogin(b);
    return {
      deployment_id: deploymentId, version_label: b.version_label ?? null, file_hash: b.file_hash, file_size: b.file_size,
      image: b.image, env: b.env ?? null, search_params: b.search_params ?? null,
      storage: b.storage ?? DEFAULT_DEPLOYMENT_STORAGE_GB, image_login_sealed: login === null ? null : secretBox.seal(login),
      s3_key: s3Key(deploymentId, b.file_hash), created_at: now,
    };
  }

  /** True when the body runs other code or launches otherwise than the version. */
  function codeChanged(b: PutBody, v: VersionRow): boolean {
    const login = imageLogin(b);
    const current = v.image_login_sealed === null ? null : secretBox.open(v.image_login_sealed);
    return b.file_hash !== v.file_hash || b.image !== v.image || (b.env ?? null) !== v.env || (b.search_params ?? null) !== v.search_params
      || (b.storage ?? DEFAULT_DEPLOYMENT_STORAGE_GB) !== v.storage || login !== current || (b.version_label ?? null) !== v.version_label;
  }

  /** (Re)starts the ttl watch: the deployment is deleted once no heartbeat has come for `ttl` seconds. */
  async function watchTtl(t: Tx, d: { id: number; ttl: number | null }, now: number): Promise<void> {
    await scheduler.cancel(ttlRef(d.id), { tx: t, kind: DEPLOYMENT_TTL_JOB });
    if (d.ttl !== null) await scheduler.schedule(DEPLOYMENT_TTL_JOB, now + d.ttl, { deployment_id: d.id }, { tx: t, ref: ttlRef(d.id) });
  }

  async function remove(t: Tx, d: DeploymentRow, now: number, why: string): Promise<void> {
    await deps.retireEndpoint(t, d.endpoint_id, now, why);
    await ds.update(d.id, { deleted_at: now }, t);
    await scheduler.cancel(ttlRef(d.id), { tx: t, kind: DEPLOYMENT_TTL_JOB });
  }

  /** Drops the oldest versions beyond MAX_DEPLOYMENT_VERSIONS (never the current one); returns their ids. */
  async function evict(t: Tx, d: { id: number; current_version_id: number }): Promise<number[]> {
    const old = (await ds.versions(d.id, t)).filter((v) => v.id !== d.current_version_id).slice(MAX_DEPLOYMENT_VERSIONS - 1).map((v) => v.id);
    await ds.deleteVersions(old, t);
    return old;
  }

  async function create(t: Tx, scope: Scope, b: PutBody, tag: string, filter: Record<string, unknown>, now: number): Promise<Static<typeof DeploymentPutReply>> {
    const blob = needBlob();
    const endpointBody = Object.fromEntries(SCALING.filter((k) => given(b[k])).map((k) => [k, b[k]]));
    const endpointId = await deps.insertEndpoint(t, scope, { ...endpointBody, endpoint_name: tag === DEFAULT_TAG ? b.name : `${b.name}-${tag}` });
    const workergroupId = await sls.insertWorkergroup({
      endpoint_id: endpointId, user_id: scope.userId, team_id: scope.teamId, template_hash: '', search_params: b.search_params ?? '',
      search_filter: JSON.stringify(filter), launch_args: null, gpu_ram: null, min_load: null, target_util: null, cold_mult: null,
      cold_workers: null, max_workers: null, test_workers: null, created_at: now, deleted_at: null,
    }, t);
    let id: number;
    try {
      id = await ds.insert({
        user_id: scope.userId, team_id: scope.teamId, name: b.name, tag, endpoint_id: endpointId, workergroup_id: workergroupId,
        current_version_id: 0, last_healthy_version_id: null, ttl: b.ttl ?? null, last_client_heartbeat: given(b.ttl) ? now : null,
        created_at: now, updated_at: now, deleted_at: null,
      }, t);
    } catch (err) {
      if (isUniqueViolation(err)) throw new RaceLost();
      throw err;
    }
    const version = versionOf(b, id, now);
    const versionId = await ds.insertVersion(version, t);
    await ds.update(id, { current_version_id: versionId }, t);
    await sls.updateWorkergroup(workergroupId, { deployment_id: id }, t);
    // The autoscaler's first run is due at once.
    await scheduler.schedule(AUTOSCALE_JOB, now, { workergroup_id: workergroupId }, { tx: t, ref: workergroupRef(workergroupId) });
    await watchTtl(t, { id, ttl: b.ttl ?? null }, now);
    return {
      success: true, action: 'created', deployment_id: id, endpoint_id: endpointId, workergroup_id: workergroupId, version_id: versionId,
      ...blob.uploadForm(version.s3_key, b.file_size, now), evicted_versions: [],
    };
  }

  async function update(t: Tx, d: DeploymentRow, b: PutBody, filter: Record<string, unknown>, now: number): Promise<Static<typeof DeploymentPutReply>> {
    const current = await ds.version(d.current_version_id, t);
    const ep = await sls.endpoint(d.endpoint_id, t);
    if (!current || !ep) throw new Error(`deployment ${d.id}: its version or endpoint is missing`);
    const base = { success: true, deployment_id: d.id, endpoint_id: d.endpoint_id, workergroup_id: d.workergroup_id };
    // Endpoint settings the body changes, checked as they will stand.
    const settings: Partial<Record<(typeof SCALING)[number], number>> = Object.fromEntries(SCALING.filter((k) => given(b[k]) && b[k] !== ep[k]).map((k) => [k, b[k]]));
    checkSettings(settings, { cold_workers: settings.cold_workers ?? ep.cold_workers, max_workers: settings.max_workers ?? ep.max_workers });
    const ttlChanged = (b.ttl ?? null) !== d.ttl;
    const set = { ...(ttlChanged ? { ttl: b.ttl ?? null } : {}), ...(b.ttl ? { last_client_heartbeat: now } : {}) };
    let upload = {};
    let action: Static<typeof DeploymentPutReply>['action'];
    let versionId = d.current_version_id;
    let evicted: number[] = [];
    if (codeChanged(b, current)) {
      const known = (await ds.versions(d.id, t)).some((v) => v.file_hash === b.file_hash);
      // A tarball the store has (a version of this deployment had it) is not asked for again.
      if (!known) upload = needBlob().uploadForm(s3Key(d.id, b.file_hash), b.file_size, now);
      versionId = await ds.insertVersion(versionOf(b, d.id, now), t);
      evicted = await evict(t, { id: d.id, current_version_id: versionId });
      await sls.updateWorkergroup(d.workergroup_id, { search_params: b.search_params ?? '', search_filter: JSON.stringify(filter) }, t);
      action = 'soft_update';
    } else {
      action = Object.keys(settings).length || ttlChanged ? 'autoscale_update' : 'exists';
    }
    if (Object.keys(settings).length) await sls.updateEndpoint(d.endpoint_id, settings, t);
    if (action !== 'exists' || Object.keys(set).length) {
      await ds.update(d.id, { ...set, current_version_id: versionId, ...(action !== 'exists' ? { updated_at: now } : {}) }, t);
    }
    if (ttlChanged) await watchTtl(t, { id: d.id, ttl: b.ttl ?? null }, now);
    return { ...base, action, version_id: versionId, ...upload, evicted_versions: evicted };
  }

  async function objectOf(d: DeploymentRow, t: Tx = store.db): Promise<Static<typeof DeploymentObject>> {
    const v = await ds.version(d.current_version_id, t);
    if (!v) throw new Error(`deployment ${d.id}: its current version is missing`);
    return {
      id: d.id, name: d.name, tag: d.tag, image: v.image, env: v.env, search_params: v.search_params, storage: v.storage,
      endpoint_id: d.endpoint_id, workergroup_id: d.workergroup_id, endpoint_state: (await sls.endpoint(d.endpoint_id, t))?.endpoint_state ?? 'active', worker_count: await deps.workerCount(d.endpoint_id, t),
      file_hash: v.file_hash, file_size: v.file_size, s3_key: v.s3_key, version_label: v.version_label,
      current_version_id: d.current_version_id, last_healthy_version_id: d.last_healthy_version_id, ttl: d.ttl,
      last_client_heartbeat: d.last_client_heartbeat, created_at: d.created_at, updated_at: d.updated_at,
    };
  }

  async function owned(principal: Principal, id: number, t: Tx = store.db, lock = false): Promise<DeploymentRow> {
    const d = await ds.inScope(id, scopeOf(principal), t, lock);
    if (!d) throw new ApiError('not_found', `deployment ${id} not found`);
    return d;
  }

  /** The ttl watch: deletes a deployment whose client stopped heartbeating, else looks again when it would expire. */
  async function ttlTick(payload: { deployment_id: number }, ctx: JobContext): Promise<void> {
    const d = await ds.byId(payload.deployment_id, ctx.tx);
    if (!d || d.ttl === null) return;
    const due = (d.last_client_heartbeat ?? d.updated_at) + d.ttl;
    if (due > ctx.now) {
      await scheduler.schedule(DEPLOYMENT_TTL_JOB, due, payload, { tx: ctx.tx, ref: ttlRef(d.id) });
      return;
    }
    await remove(ctx.tx, d, ctx.now, `deployment ${d.id} expired: no client heartbeat for ${d.ttl} s (ttl)`);
  }
  scheduler.register(DEPLOYMENT_TTL_JOB, ttlTick);

  return {
    /** `PUT /api/v0/deployments/`: creates the deployment, or updates it by name and tag. */
    async put(principal: Principal, b: PutBody): Promise<Static<typeof DeploymentPutReply>> {
      const scope = scopeOf(principal);
      const tag = b.tag ?? DEFAULT_TAG;
      const filter = deps.searchFilter(b.search_params ?? '');
      // The container options are read as a template's are (`-e NAME=value -p 3000:3000/tcp`): a mistake is a 400 now.
      try {
        parseDockerEnv(b.env);
      } catch (err) {
        if (err instanceof EnvParseError) throw badRequest(`env: ${err.message}`);
        throw err;
      }
      const now = clock.now();
      const attempt = () => tx(async (t) => {
        const [existing] = await ds.byName(scope, b.name, tag, t, true);
        return existing ? update(t, existing, b, filter, now) : create(t, scope, b, tag, filter, now);
      });
      try {
        return await attempt();
      } catch (err) {
        if (!(err instanceof RaceLost)) throw err;
      }
      try {
        return await attempt();
      } catch (err) {
        if (err instanceof RaceLost) throw new ApiError('conflict', `deployment ${JSON.stringify(b.name)} (tag ${JSON.stringify(tag)}) is being created by another request: retry`);
        throw err;
      }
    },

    async list(principal: Principal) {
      const deployments = [];
      for (const d of await ds.list(scopeOf(principal))) deployments.push(await objectOf(d));
      return { success: true as const, deployments };
    },

    async get(principal: Principal, id: number) {
      return { success: true as const, deployment: await objectOf(await owned(principal, id)) };
    },

    async versions(principal: Principal, id: number) {
      const d = await owned(principal, id);
      const versions = (await ds.versions(d.id)).map((v): Static<typeof VersionObject> => {
        const { image_login_sealed: _l, ...rest } = v;
        return { ...rest, current: v.id === d.current_version_id };
      });
      return { success: true as const, versions };
    },

    /** Deletes the deployment, its endpoint and workergroup; the workers are destroyed. */
    async remove(principal: Principal, id: number) {
      return tx(async (t) => {
        const d = await owned(principal, id, t, true);
        await remove(t, d, clock.now(), `deployment ${id} deleted: workers released`);
        return { success: true as const, msg: `deployment ${id} deleted` };
      });
    },

    /** `vastai delete deployment --name N [--tag T]`: every tag of the name unless one is given. */
    async removeByName(principal: Principal, body: Static<typeof DeleteByNameBody>) {
      return tx(async (t) => {
        const found = await ds.byName(scopeOf(principal), body.name, body.tag ?? null, t, true);
        if (found.length === 0) throw new ApiError('not_found', `no deployment named ${JSON.stringify(body.name)}${given(body.tag) ? ` with tag ${JSON.stringify(body.tag)}` : ''}`);
        const now = clock.now();
        for (const d of found) await remove(t, d, now, `deployment ${d.id} deleted: workers released`);
        return { success: true as const, count: found.length, msg: `deleted ${found.length} deployment(s)` };
      });
    },

    /**
     * `stop deployment` / `start deployment`: its endpoint stops (the autoscaler releases every worker at once and
     * keeps none) or starts again (the autoscaler scales it as before). The deployment and its versions stay.
     */
    async setState(principal: Principal, id: number, state: EndpointState) {
      return tx(async (t) => {
        const d = await owned(principal, id, t, true);
        const ep = await sls.endpoint(d.endpoint_id, t);
        if (ep?.endpoint_state === state) return { success: true as const, msg: `deployment ${id} is already ${state === 'active' ? 'started' : 'stopped'}` };
        await sls.updateEndpoint(d.endpoint_id, { endpoint_state: state }, t);
        await scaler.runNow(t, d.workergroup_id, clock.now());
        return { success: true as const, msg: `deployment ${id} ${state === 'active' ? 'started' : 'stopped'}` };
      });
    },

    /** The client holding a deployment with a ttl is still there (the SDK's background heartbeat). */
    async heartbeat(principal: Principal, id: number) {
      const d = await owned(principal, id);
      await ds.update(d.id, { last_client_heartbeat: clock.now() });
      return { success: true as const, msg: d.ttl === null ? `deployment ${id} has no ttl: heartbeats change nothing` : `deployment ${id} kept for ${d.ttl} s more` };
    },

    /**
     * Where a worker downloads the current tarball (the SDK's serve_deployment.py, with the instance's key). An
     * instance key gets it only for a deployment its instance is a worker of.
     */
    async downloadUrl(principal: Principal, id: number) {
      const d = await owned(principal, id);
      if (principal.key.kind === 'instance') {
        const instanceId = (principal.key as { instance_id?: number | null }).instance_id ?? null;
        const workers = (await sls.workers([d.workergroup_id])).map((w) => w.instance_id);
        if (instanceId === null || !workers.includes(instanceId)) throw new ApiError('permission_denied', `instance ${instanceId} is not a worker of deployment ${id}`);
      }
      const v = await ds.version(d.current_version_id);
      if (!v) throw new Error(`deployment ${id}: its current version is missing`);
      return { success: true as const, download_url: needBlob().downloadUrl(v.s3_key, clock.now()) };
    },

    /**
     * `POST /update_workers/` (the SDK, after a soft_update): the workergroup's workers are replaced by workers of its
     * current launch, all at once at the autoscaler's next run (not one by one).
     */
    async updateWorkers(principal: Principal, workergroupId: number) {
      return tx(async (t) => {
        const wg = await sls.workergroupInScope(workergroupId, scopeOf(principal), t, true);
        if (!wg) throw new ApiError('not_found', `workergroup ${workergroupId} not found`);
        const replaced = await scaler.replaceWorkers(t, wg, clock.now());
        return { success: true as const, msg: `workergroup ${workergroupId}: ${replaced.length} worker(s) replaced at the autoscaler's next run` };
      });
    },

    /** What a deployment's workergroup launches: its current version (the autoscaler's `launchOf`). */
    async launchOf(t: Tx, wg: WorkergroupRow): Promise<CreateRequest | undefined> {
      const d = wg.deployment_id === null ? undefined : await ds.byId(wg.deployment_id, t);
      const v = d && (await ds.version(d.current_version_id, t));
      if (!d || !v) return undefined;
      // What the SDK's bootstrap (serve_deployment.py) reads to fetch this deployment's tarball.
      const env = { ...parseDockerEnv(v.env), IS_DEPLOYMENT: 'true', DEPLOYMENT_ID: String(d.id) };
      const login = v.image_login_sealed === null ? null : secretBox.open(v.image_login_sealed);
      return { image: v.image, env, disk: v.storage, runtype: 'args', ...(login ? { image_login: login } : {}) };
    },
  };
}

export type DeploymentsService = ReturnType<typeof deploymentsFactory>;

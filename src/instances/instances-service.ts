/**
 * Instance operations after creation: show, stop/start, label, bulk state, destroy, change bid, SSH keys, logs.
 * Each runs in one transaction and leaves the fleet's GPU holds, the billing meters and `actual_status` agreeing.
 * The restricted instance key may start, stop and destroy its own instance and nothing else (spec Authentication 7).
 */
import type { Config } from '../config.js';
import { toEventData } from './instances-events.js';
import { scopeOf, type Principal } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import { sha256Hex, type SecretBox } from '../platform/crypto.js';
import type { Db, Tx } from '../platform/db/connect.js';
import { ApiError, badRequest } from '../platform/errors.js';
import { toDollars, toMicro } from '../platform/money.js';
import { secretToken, type Random } from '../platform/random.js';
import type { BillingApi } from '../billing/billing-contract.js';
import type { MachinesApi } from '../machines/machines-contract.js';
import type { KeysContract } from '../keys/keys-contract.js';
import { contractOf, refOf, type Lifecycle } from './instances-lifecycle.js';
import type { InstanceHostsPort } from './instances-hosts-contract.js';
import type { VolumesPort } from './instances-contract.js';
import type { InstanceRow, InstancesStore } from './instances-store.js';
import { toInstanceObject, type InstanceObject } from './instances-view.js';
import type { GpuStatesPort } from './instances-gpu-view.js'; // issue 33 (telemetry)
import { MAX_LABEL_CHARS } from './instances-request.js';
import { mayOpenJupyter } from './instances-jupyter.js';
import { parseSshPublicKey } from '../ssh-keys/ssh-keys-contract.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { Static } from 'typebox';
import type { BulkBody, BulkReply, LogsBody, UpdateBody } from './instances-schemas.js';
import { transact } from './instances-batch.js';

/** A `request_logs` result_url stays valid this long. */
export const LOG_URL_TTL_S = 3600;

export interface ServiceDeps {
  db: Db;
  store: InstancesStore;
  lifecycle: Lifecycle;
  fleet: MachinesApi;
  billing: BillingApi;
  keys: Pick<KeysContract, 'revokeInstanceKeys'>;
  scheduler: Scheduler;
  clock: Clock;
  random: Random;
  config: Config;
  /** Opens a Jupyter instance's token for the instance object (instances-jupyter.ts). */
  secretBox: SecretBox;
  volumes: VolumesPort;
  /** The host of each instance's machine: where its log comes from. */
  hosts: InstanceHostsPort;
  /** Issue 33 (telemetry): the GPUs of agent machines as last sampled (the agent server; none in emulator-only wiring). */
  gpuStates?: GpuStatesPort;
  /** Called after a state change commits (wakes event streams and waiters in this process). */
  notify: () => void;
  /** Other features' work when an instance is destroyed, inside the destroy's transaction (instances-module onDestroy). */
  destroyHooks?: readonly DestroyHook[];
}

/** Called inside a destroy's transaction, after the instance is marked destroyed (e.g. its scheduled jobs go). */
export type DestroyHook = (tx: Tx, instanceId: number) => Promise<void>;

/** An instance key reaches only its own instance; a user key only its scope's. Someone else's instance is 404. */
export function checkInstanceKey(principal: Principal, id: number): void {
  if (principal.key.kind === 'instance' && principal.key.instance_id !== id) {
    throw new ApiError('permission_denied', 'an instance API key can only start, stop or destroy its own instance');
  }
}

/**
 * The caller's live instance `id`, locked for the rest of `tx` (PostgreSQL); 404 when it is not in its scope.
 * With `machineFirst` (a stop, start, destroy or bid change: the transaction changes GPU holds on the instance's
 * machine), its machine's row is locked first: the lock order of MachinesApi.lockMachine. Freeing GPUs goes on to resume
 * the machine's outbid instances (instances-lifecycle.ts `resumeWaiting`), and starting stops those it outbids:
 * without the machine taken first, two of these on one machine each held an instance the other waited for
 * (PostgreSQL deadlocks, test/instances-lock-order.test.ts). An instance never moves, so the machine named by the row
 * as found is the one to lock. One statement, where the read and the two locks were three.
 */
export async function lockInScope(
  store: InstancesStore, principal: Principal, id: number, tx: Tx, machineFirst = false, missing: MissingInstanceCode = 'not_found',
): Promise<InstanceRow> {
  checkInstanceKey(principal, id);
  const inst = await store.lockInScope(id, scopeOf(principal), tx, machineFirst);
  if (!inst) throw new ApiError(missing, `instance ${id} not found`);
  return inst;
}

/**
 * The error of an instance that is not there (never existed, destroyed, or not the caller's; one answer for all, so
 * nobody learns of another's instance): `not_found`, or `no_such_instance` for a destroy, the code dstack's Vast.ai
 * client reads as "already gone" (issue 29 item 2).
 */
type MissingInstanceCode = 'not_found' | 'no_such_instance';

export function instancesServiceFactory(deps: ServiceDeps) {
  const { db, store, lifecycle, fleet, billing, keys, clock, random, config, notify } = deps;
  const locked = (principal: Principal, id: number, tx: Tx) => lockInScope(store, principal, id, tx);
  /** The same for a change of GPU holds: its machine's row first (lockInScope). */
  const lockedWithMachine = (principal: Principal, id: number, tx: Tx) => lockInScope(store, principal, id, tx, true);

  async function write<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    const out = await transact(db, fn);
    notify();
    return out;
  }

  const assertCredit = (tx: Tx) => (userId: number) => billing.assertCredit(userId, tx);
  /** What opens the Jupyter tokens in the instance objects this caller is shown: nothing unless it may act on them. */
  const secretsFor = (principal: Principal) => (mayOpenJupyter(principal) ? deps.secretBox : null);

  async function stop(tx: Tx, inst: InstanceRow, now: number): Promise<void> {
    // Stopped, or its stop waits for its host (lifecycle `stop`): nothing more to do.
    if (inst.intended_status === 'stopped') return;
    await lifecycle.stop(tx, inst, now);
    await lifecycle.resumeWaiting(tx, inst.machine_id, now, assertCredit(tx));
  }

  async function start(tx: Tx, inst: InstanceRow, now: number): Promise<void> {
    if (inst.intended_status === 'running' && (inst.actual_status === null || inst.actual_status === 'loading' || inst.actual_status === 'running')) return;
    if (inst.actual_status === 'unknown' || inst.actual_status === 'offline') {
      throw new ApiError('conflict', `instance ${inst.id} is ${inst.actual_status}: its host is unreachable; destroy it and rent another offer`);
    }
    await billing.assertCredit(inst.user_id, tx, contractOf(inst.id));
    if (inst.actual_status === 'exited') {
      // The crashed container still holds its GPUs: boot it again in place.
      await lifecycle.boot(tx, inst, now, 'restarted after exit');
      return;
    }
    const got = await fleet.reallocate(tx, {
      instanceId: inst.id,
      machineId: inst.machine_id!,
      numGpus: inst.num_gpus,
      kind: inst.is_bid ? 'bid' : 'ondemand',
      bidPerGpuMicro: inst.bid_per_gpu_micro ?? undefined,
    });
    if (!got) {
      throw new ApiError('conflict', `instance ${inst.id} cannot start: its machine's GPUs are in use by another instance; try again later`);
    }
    await lifecycle.outbid(tx, got.outbid, now);
    await lifecycle.boot(tx, { ...inst, gpu_indexes: JSON.stringify(got.gpuIndexes) }, now);
  }

  async function setState(tx: Tx, inst: InstanceRow, state: 'running' | 'stopped', now: number) {
    if (state === 'stopped') await stop(tx, inst, now);
    else await start(tx, inst, now);
  }

  async function machineOf(id: number | null) {
    return id === null ? undefined : fleet.machine(id);
  }

  /** Destroys the instance inside `tx`: GPUs freed, every meter stopped, its instance key revoked. */
  async function destroyIn(tx: Tx, principal: Principal, id: number) {
    const inst = await lockInScope(store, principal, id, tx, true, 'no_such_instance');
    const now = clock.now();
    await deps.scheduler.cancel(refOf(id), { tx });
    await fleet.release(tx, id);
    await billing.stopContract(tx, { contract: contractOf(id), at: now });
    await deps.volumes.detachAll(tx, id);
    await lifecycle.transition(tx, inst, {
      actual_status: 'destroyed', intended_status: 'destroyed', status_msg: null, ports: null, running_since: null, gpu_indexes: '[]', destroyed_at: now,
    }, now);
    for (const hook of deps.destroyHooks ?? []) await hook(tx, id);
    await keys.revokeInstanceKeys(inst.user_id, id, now, tx);
    await lifecycle.resumeWaiting(tx, inst.machine_id, now, assertCredit(tx));
    return { success: true as const };
  }

  return {
    /**
     * `{instances: null}` when the instance does not exist, is destroyed or is not in the caller's scope: vast.py's
     * `show instance` prints "not found or no longer exists" on exactly that, and fails with an HTTP error on a 404
     * (the client wins over the spec's 404; issue 29 item 2). dstack polls this route and stops on an error too.
     */
    async show(principal: Principal, id: number): Promise<{ instances: InstanceObject | null }> {
      checkInstanceKey(principal, id);
      const inst = await store.findInScope(id, scopeOf(principal));
      if (!inst) return { instances: null };
      const gpu = inst.machine_id === null || !deps.gpuStates ? undefined : (await deps.gpuStates([inst.machine_id])).get(inst.machine_id);
      return { instances: toInstanceObject(inst, await machineOf(inst.machine_id), clock.now(), deps.config, secretsFor(principal), gpu ?? null) };
    },

    /**
     * The instance's state changes so far, oldest first (the web console's status timeline; the same frames the
     * event stream sends).
     */
    async history(principal: Principal, id: number): Promise<{ success: true; events: ReturnType<typeof toEventData>[] }> {
      checkInstanceKey(principal, id);
      const inst = await store.findInScope(id, scopeOf(principal));
      if (!inst) throw new ApiError('not_found', `instance ${id} not found`);
      return { success: true, events: (await store.eventsOf(id)).map(toEventData) };
    },

    /** Every live instance of the caller's scope, as instance objects. */
    async all(principal: Principal): Promise<InstanceObject[]> {
      const rows = await store.listInScope(scopeOf(principal));
      // Their machines in one statement, not one each.
      const machines = await fleet.machines(rows.flatMap((r) => (r.machine_id === null ? [] : [r.machine_id])));
      const now = clock.now();
      const secrets = secretsFor(principal);
      // Issue 33: the agent machines' GPU samples, one read for all.
      const gpus = deps.gpuStates ? await deps.gpuStates([...machines.values()].filter((m) => m.agent).map((m) => m.id)) : new Map();
      return rows.map((r) => toInstanceObject(r, r.machine_id === null ? undefined : machines.get(r.machine_id), now, deps.config, secrets, (r.machine_id === null ? undefined : gpus.get(r.machine_id)) ?? null));
    },

    /** `PUT /api/v0/instances/{id}/` with `state` and/or `label`. */
    async update(principal: Principal, id: number, body: Static<typeof UpdateBody>) {
      if (body.state === undefined && body.label === undefined) throw badRequest('body: give state ("running" or "stopped") or label');
      if (body.label !== undefined && principal.key.kind === 'instance') {
        throw new ApiError('permission_denied', 'an instance API key can only start, stop or destroy its own instance');
      }
      if (body.label && body.label.length > MAX_LABEL_CHARS) throw badRequest(`body.label is longer than ${MAX_LABEL_CHARS} characters`);
      return write(async (tx) => {
        const inst = body.state === undefined ? await locked(principal, id, tx) : await lockedWithMachine(principal, id, tx);
        const now = clock.now();
        if (body.label !== undefined) await store.update(id, { label: body.label }, tx);
        if (body.state !== undefined) await setState(tx, { ...inst, label: body.label ?? inst.label }, body.state, now);
        return { success: true as const };
      });
    },

    /** `PUT /api/v0/instances/` `{state, ids}`: each id on its own; the reply says which failed and why. */
    async bulk(principal: Principal, body: Static<typeof BulkBody>): Promise<Static<typeof BulkReply>> {
      const ok: number[] = [];
      const failed: Static<typeof BulkReply>['failed'] = [];
      for (const id of [...new Set(body.ids)]) {
        try {
          await write(async (tx) => setState(tx, await lockedWithMachine(principal, id, tx), body.state, clock.now()));
          ok.push(id);
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          failed.push({ id, error: err.code, msg: err.message });
        }
      }
      return { success: failed.length === 0, ids: ok, failed, ...(failed.length ? { msg: `${failed.length} of ${body.ids.length} failed` } : {}) };
    },

    /** Destroys the instance: GPUs freed, every meter stopped, its instance key revoked. */
    async destroy(principal: Principal, id: number) {
      return write((tx) => destroyIn(tx, principal, id));
    },

    /** The same inside the caller's transaction (the serverless autoscaler's job); the caller notifies. */
    destroyIn,

    /** `PUT /api/v0/instances/bid_price/{id}/` `{price}`: $/hour for the instance, at least the offer's min bid. */
    async changeBid(principal: Principal, id: number, price: number) {
      return write(async (tx) => {
        const inst = await lockedWithMachine(principal, id, tx);
        if (!inst.is_bid) throw badRequest(`instance ${id} is on-demand; only bid (interruptible) instances have a bid price`);
        const machine = await fleet.machine(inst.machine_id!, tx);
        const minTotal = (machine?.min_bid_micro ?? 0) * inst.num_gpus;
        if (toMicro(price) < minTotal) throw badRequest(`body.price ${price} is below the minimum bid of ${toDollars(minTotal)} $/hour`);
        const perGpu = Math.floor(toMicro(price) / inst.num_gpus);
        const now = clock.now();
        const next = { ...inst, bid_per_gpu_micro: perGpu, gpu_rate_micro: perGpu * inst.num_gpus };
        await store.update(id, { bid_per_gpu_micro: perGpu, gpu_rate_micro: next.gpu_rate_micro }, tx);
        if ((JSON.parse(inst.gpu_indexes) as number[]).length > 0) await fleet.setBid(tx, id, perGpu);
        if (inst.actual_status === 'running') await lifecycle.startGpuMeter(tx, next, now);
        // A higher bid may win the GPUs back now.
        await lifecycle.resumeWaiting(tx, inst.machine_id, now, assertCredit(tx));
        return { success: true as const };
      });
    },

    async attachSshKey(principal: Principal, id: number, sshKey: string) {
      const key = parseSshPublicKey(sshKey).normalized;
      return write(async (tx) => {
        await locked(principal, id, tx);
        const existing = (await store.sshKeysOf(id, tx)).find((k) => k.ssh_key === key);
        const keyId = existing?.id ?? (await store.attachSshKey(id, key, clock.now(), tx));
        return { success: true as const, key_id: keyId, msg: `SSH key attached to instance ${id}` };
      });
    },

    async detachSshKey(principal: Principal, id: number, keyId: number) {
      return write(async (tx) => {
        await locked(principal, id, tx);
        if (!(await store.detachSshKey(id, keyId, tx))) throw new ApiError('not_found', `SSH key ${keyId} is not attached to instance ${id}`);
        return { success: true as const, msg: `SSH key detached from instance ${id}` };
      });
    },

    async listSshKeys(principal: Principal, id: number) {
      checkInstanceKey(principal, id);
      if (!(await store.findInScope(id, scopeOf(principal)))) throw new ApiError('not_found', `instance ${id} not found`);
      return { success: true as const, ssh_keys: (await store.sshKeysOf(id)).map((k) => ({ id: k.id, ssh_key: k.ssh_key, created_at: k.created_at })) };
    },

    /** `request_logs`: an unguessable, expiring `result_url` (the client fetches it without a key). */
    async requestLogs(principal: Principal, id: number, body: Static<typeof LogsBody>) {
      checkInstanceKey(principal, id);
      const inst = await store.findInScope(id, scopeOf(principal));
      if (!inst) throw new ApiError('not_found', `instance ${id} not found`);
      const token = secretToken(random, '');
      const tail = body.tail ?? null;
      const filter = body.filter ?? null;
      const logRequestId = await store.insertLogRequest({ instance_id: id, token_hash: sha256Hex(token), tail, filter, expires_at: clock.now() + LOG_URL_TTL_S });
      await deps.hosts.logsRequested({ logRequestId, instanceId: id, machineId: inst.machine_id, tail, filter });
      return { success: true as const, result_url: `${config.publicUrl}/api/v0/instances/logs/${token}/`, msg: 'logs are ready at result_url' };
    },

    /** The instance's log behind a `result_url`, as its host sent it, as plain text. */
    async logText(token: string): Promise<string> {
      const req = await store.findLogRequest(sha256Hex(token));
      if (!req || req.expires_at < clock.now()) throw new ApiError('not_found', 'no such log, or it expired');
      return deps.hosts.logText({ logRequestId: req.id, instanceId: req.instance_id, tail: req.tail, filter: req.filter });
    },
  };
}

export type InstancesService = ReturnType<typeof instancesServiceFactory>;

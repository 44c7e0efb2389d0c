/**
 * Renting an offer: `PUT /api/v0/asks/{offer_id}/` (spec: Create instance, rules 1-8). The offer check, the GPU
 * allocation, the instance row, the instance key and the first charges commit in one transaction, so each GPU goes
 * to at most one instance under any concurrency (the fleet's allocate serializes on the GPUs).
 */
import type { Config } from '../config.js';
import type { Principal } from '../platform/auth.js';
import { scopeOf } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import { sha256Hex, type SecretBox } from '../platform/crypto.js';
import type { Db, Tx } from '../platform/db/connect.js';
import type { Static } from 'typebox';
import { ApiError, badRequest } from '../platform/errors.js';
import { diskRateMicro, toDollars, toMicro } from '../platform/money.js';
import type { Random } from '../platform/random.js';
import type { BillingApi } from '../billing/billing-contract.js';
import type { MachinesApi } from '../machines/machines-contract.js';
import type { KeysService } from '../keys/keys-service.js';
import { EnvParseError, mergeTemplateIntoRequest } from '../templates/templates-contract.js';
import type { Lifecycle } from './instances-lifecycle.js';
import type { AccountEnvPort, SshKeysPort } from './instances-ports.js';
import type { CreateRequest, TemplatesPort, VolumesPort } from './instances-contract.js';
import {
  argsListToString, checkImage, checkImageLogin, DEFAULT_DISK_GB, directPortCapacity, directPortsWanted, MAX_LABEL_CHARS,
  parseEnvObject, parseRuntype,
  readOnstart, readVolumeInfo,
} from './instances-request.js';
import type { InstanceRow, InstancesStore } from './instances-store.js';
import type { CreateReply as CreateReplySchema } from './instances-schemas.js';
import { txBatcher } from './instances-batch.js';
import { checkJupyterDir, sealedTokenFor } from './instances-jupyter.js';

/** How long a create reply is kept for its `Idempotency-Key`. */
export const IDEMPOTENCY_RETENTION_S = 24 * 3600;
export const IDEMPOTENCY_KEY_MAX_CHARS = 255;

export type CreateReply = Static<typeof CreateReplySchema>;

/**
 * The idempotency record of a rent (`instance_idempotency.reply`). An instance key is shown once and never stored in
 * clear: the record keeps it sealed with the server's secret key (SecretBox, AES-GCM, as image logins are), and a
 * retry gets the first reply back unchanged, the same instance and the same key. Not a fresh key per retry: a retry
 * comes when the first reply may have been lost or may still be on its way, and an instance keeps one key; minting
 * one per retry would leave live keys nobody holds, or revoke the one the first reply delivered.
 */
interface IdempotencyRecord {
  new_contract: number;
  instance_api_key_sealed: string;
}

export interface CreateDeps {
  db: Db;
  store: InstancesStore;
  lifecycle: Lifecycle;
  fleet: MachinesApi;
  billing: BillingApi;
  keysService: KeysService;
  clock: Clock;
  /** A Jupyter runtype's token (instances-jupyter.ts). */
  random: Random;
  config: Config;
  secretBox: SecretBox;
  templates: TemplatesPort;
  sshKeys: SshKeysPort;
  volumes: VolumesPort;
  /** The account's environment variables, given to the instance's runtime (never shown in `extra_env`). */
  accountEnv?: AccountEnvPort;
  /** Wakes event streams after a commit. */
  notify: () => void;
  /** Throws ApiError when the account may not rent (a host-only subaccount, src/subaccounts/). */
  mayRent?: (userId: number, tx?: Tx) => Promise<void>;
}

const given = <T>(v: T | null | undefined): v is T => v !== null && v !== undefined;

/** The body's options after the spec's rules, before the offer is looked at. */
async function readBody(body: CreateRequest, principal: Principal, deps: CreateDeps, tx?: Tx) {
  await deps.mayRent?.(principal.user.id, tx);
  if (given(body.template_id)) throw badRequest('body.template_id is not accepted for creation; use template_hash_id (spec rule 7)');
  if (given(body.env)) parseEnvObject(body.env); // rule 5, checked before the template's env is merged in
  let runtype = given(body.runtype) && body.runtype !== '' ? parseRuntype(body.runtype) : null;
  let argsStr = body.args_str ?? null;
  if (given(body.args)) {
    if (!Array.isArray(body.args)) throw badRequest('body.args must be a list of strings');
    argsStr = argsListToString(body.args);
    runtype ??= 'args';
  }
  const request = {
    image: body.image ?? null,
    disk: body.disk ?? null,
    runtype,
    env: given(body.env) ? (body.env as Record<string, string>) : null,
    onstart: given(body.onstart) ? readOnstart(body.onstart) : null,
    args_str: argsStr,
    use_jupyter_lab: body.use_jupyter_lab ?? null,
    jupyter_dir: body.jupyter_dir ?? null,
    image_login: given(body.image_login) && body.image_login !== '' ? body.image_login : null,
    volume_info: readVolumeInfo(body.volume_info),
  };
  let merged: ReturnType<typeof mergeTemplateIntoRequest<typeof request>> | null = null;
  if (given(body.template_hash_id)) {
    const template = await deps.templates.getForCreate(body.template_hash_id, scopeOf(principal), tx);
    if (!template) throw new ApiError('not_found', `template ${JSON.stringify(body.template_hash_id)} not found`);
    try {
      merged = mergeTemplateIntoRequest(template, request);
    } catch (err) {
      if (err instanceof EnvParseError) throw badRequest(`template env: ${err.message}`);
      throw err;
    }
  }
  const image = merged?.image ?? request.image;
  if (!image) throw badRequest('body.image is required (or a template_hash_id whose template has one)');
  checkImage(image);
  const finalRuntype = merged ? parseRuntype(merged.runtype) : (request.runtype ?? (argsStr ? 'args' : 'ssh_proxy'));
  const finalArgs = merged ? merged.args_str : argsStr;
  if (finalArgs && finalRuntype !== 'args' && request.args_str !== null) {
    throw badRequest('body.args_str is only used with runtype args');
  }
  const env = parseEnvObject(merged?.env ?? request.env ?? {});
  if (body.python_utf8 === true) env.vars.PYTHONIOENCODING ??= 'utf-8';
  if (body.lang_utf8 === true) env.vars.LANG ??= 'C.UTF-8';
  const imageLogin = merged?.image_login ?? request.image_login;
  if (imageLogin && !merged?.docker_login_user) checkImageLogin(imageLogin);
  const disk = merged?.disk ?? request.disk ?? DEFAULT_DISK_GB;
  if (typeof disk !== 'number' || !(disk > 0)) throw badRequest('body.disk must be a positive number of GB');
  const label = body.label ?? null;
  if (label !== null && label.length > MAX_LABEL_CHARS) throw badRequest(`body.label is longer than ${MAX_LABEL_CHARS} characters`);
  const price = body.price ?? null;
  const vm = body.vm === true;
  if (vm) {
    const keys = await deps.sshKeys.publicKeysOf(principal.user.id, tx);
    if (keys.length === 0 && !principal.user.ssh_key) {
      throw badRequest('body.vm: a VM needs an SSH key registered before creation (POST /api/v0/ssh/); it cannot be added later');
    }
  }
  const jupyterDir = merged ? merged.jupyter_dir : request.jupyter_dir;
  checkJupyterDir(jupyterDir, merged ? 'jupyter_dir (the request\'s or its template\'s)' : 'body.jupyter_dir');
  return {
    image,
    runtype: finalRuntype,
    args_str: finalRuntype === 'args' ? finalArgs : null,
    env,
    onstart: merged ? merged.onstart : request.onstart,
    image_login: imageLogin,
    disk,
    label,
    price,
    vm,
    jupyter_dir: jupyterDir,
    use_jupyter_lab: (merged ? merged.use_jupyter_lab : request.use_jupyter_lab) === true,
    volume_info: request.volume_info,
    template: merged ? { id: merged.template_id, hash_id: merged.template_hash_id } : null,
    target_state: body.target_state === 'stopped' ? 'stopped' : 'running',
    cancel_unavail: body.cancel_unavail === true,
    options: { python_utf8: body.python_utf8 === true, lang_utf8: body.lang_utf8 === true, extra: body.extra ?? null, force: body.force ?? null },
  };
}

export function createFactory(deps: CreateDeps) {
  const { db, store, lifecycle, fleet, billing, keysService, clock, secretBox } = deps;
  const batcher = txBatcher(db, store.dialect);

  type Options = Awaited<ReturnType<typeof readBody>>;

  async function rent(principal: Principal, offerId: number, opts: Options, tx: Tx): Promise<CreateReply> {
    const scope = scopeOf(principal);
    const now = clock.now();
    // The account that pays: in a team context the team's owner, not the member renting (scopeOf).
    await billing.assertCredit(scope.userId, tx);
    const accountEnv = deps.accountEnv ? await deps.accountEnv.environmentOf(scope, tx) : undefined;
    // Locks the machine (PostgreSQL), the first lock of the lock order; the allocation below reads nothing again.
    const quote = await fleet.getOffer(offerId, tx, { forAllocation: true });
    if (!quote) {
      // An id no machine ever offered is "no such resource" (contract §4: 404 not_found), not "gone": the 410 said
      // "no longer available" of offers that never existed (issue 29 item 10).
      if (await fleet.offerNeverExisted(offerId, tx)) throw new ApiError('not_found', `offer ${offerId} does not exist: no machine offers it (search offers for the ids on the market)`);
      throw new ApiError('offer_unavailable', `offer ${offerId} is no longer available: rented by someone else or taken off the market`);
    }
    const { offer, machine } = quote;
    if (opts.cancel_unavail && machine.fault !== null) {
      throw new ApiError('offer_unavailable', `offer ${offerId} cannot start now (its host is ${machine.fault}); cancel_unavail was set`);
    }
    const numGpus = Number(offer.num_gpus);
    let bidPerGpu: number | null = null;
    if (opts.price !== null) {
      // The client's --price is per machine ($/hour for the instance). The offer's `min_bid` is for the whole bundle
      // and already counts bids it would displace; the machine's min_bid is per GPU (contract §2).
      const minTotal = typeof offer.min_bid === 'number' ? toMicro(offer.min_bid) : machine.min_bid_micro * numGpus;
      if (toMicro(opts.price) < minTotal) {
        throw badRequest(`body.price ${opts.price} is below this offer's minimum bid of ${toDollars(minTotal)} $/hour`);
      }
      bidPerGpu = Math.floor(toMicro(opts.price) / numGpus);
    }
    if (typeof offer.disk_space === 'number' && opts.disk > offer.disk_space) {
      throw badRequest(`body.disk ${opts.disk} GB is more than the offer's ${offer.disk_space} GB`);
    }
    if (opts.vm && !machine.vms_enabled) throw badRequest('body.vm: this offer\'s machine cannot run VMs (vms_enabled is false)');
    const wantedPorts = directPortsWanted(opts.runtype, opts.env.ports);
    const capacity = directPortCapacity(machine, numGpus);
    if (wantedPorts > capacity) {
      throw badRequest(
        `this offer has ${capacity} direct port${capacity === 1 ? '' : 's'} for ${numGpus} GPU${numGpus === 1 ? '' : 's'}; ` +
          `runtype ${opts.runtype} and the -p mappings need ${wantedPorts}: use a proxy runtype or an offer with more direct_port_count`,
      );
    }

    const row: Omit<InstanceRow, 'id'> = {
      user_id: scope.userId,
      team_id: scope.teamId,
      offer_id: offerId,
      machine_id: null,
      host_id: null,
      num_gpus: numGpus,
      image: opts.image,
      image_login_sealed: opts.image_login ? secretBox.seal(opts.image_login) : null,
      runtype: opts.runtype,
      args_str: opts.args_str,
      env: JSON.stringify(opts.env.vars),
      account_env_sealed: accountEnv && Object.keys(accountEnv).length ? secretBox.seal(JSON.stringify(accountEnv)) : null,
      api_key_sealed: null, // sealed once the key is made, with the placement
      jupyter_token_sealed: sealedTokenFor(opts.runtype, deps.random, secretBox),
      port_maps: JSON.stringify(opts.env.ports),
      hostname: opts.env.hostname,
      onstart: opts.onstart,
      label: opts.label,
      disk: opts.disk,
      is_bid: bidPerGpu === null ? 0 : 1,
      bid_per_gpu_micro: bidPerGpu,
      gpu_rate_micro: (bidPerGpu ?? machine.price_gpu_micro) * numGpus,
      disk_rate_micro: diskRateMicro(machine.price_disk_micro, opts.disk),
      actual_status: null,
      intended_status: opts.target_state,
      status_msg: null,
      ports: null,
      gpu_indexes: '[]',
      offer_snapshot: '{}',
      running_since: null,
      state_version: 0,
      destroyed_at: null,
      generation: 1,
      repull: 0,
      template_hash_id: opts.template?.hash_id ?? null,
      template_id: opts.template?.id ?? null,
      vm: opts.vm ? 1 : 0,
      jupyter_dir: opts.jupyter_dir,
      use_jupyter_lab: opts.use_jupyter_lab ? 1 : 0,
      options: JSON.stringify(opts.options),
      volume_info: opts.volume_info ? JSON.stringify(opts.volume_info) : null,
      created_at: now,
    };
    const id = await store.insert(row, tx);
    const alloc = await fleet.allocate(tx, {
      offerId, instanceId: id, kind: bidPerGpu === null ? 'ondemand' : 'bid', bidPerGpuMicro: bidPerGpu ?? undefined, seen: quote.seen,
    });
    await lifecycle.outbid(tx, alloc.outbid, now);
    // Written with its first state below (boot or halt), in the same statement.
    const placement = { machine_id: alloc.machineId, host_id: alloc.hostId, offer_snapshot: JSON.stringify(alloc.offer) };
    const placed = { ...placement, gpu_indexes: JSON.stringify(alloc.gpuIndexes) };
    if (opts.volume_info) {
      const mounted = await deps.volumes.attachAtCreate(tx, { instanceId: id, machineId: alloc.machineId, scope, volume: opts.volume_info });
      if (mounted) await store.update(id, { volume_info: JSON.stringify(mounted) }, tx);
    }
    const { secret } = await keysService.create({ user_id: scope.userId, team_id: scope.teamId, kind: 'instance', instance_id: id, name: `instance ${id}` }, tx);
    // Sealed for the container's CONTAINER_API_KEY, written with the placement (one statement).
    const keyed = { ...placement, api_key_sealed: secretBox.seal(secret) };
    if (opts.template) await deps.templates.recordUse(opts.template.id, now, tx);
    const inst: InstanceRow = { ...row, ...placed, id };
    await lifecycle.startDiskMeter(tx, inst, now);
    if (opts.target_state === 'running') {
      await lifecycle.boot(tx, inst, now, null, { created: true, placement: keyed });
    } else {
      await lifecycle.halt(tx, inst, now, { actual_status: 'stopped', intended_status: 'stopped', status_msg: null, placement: keyed });
    }
    return { success: true, new_contract: id, instance_api_key: secret };
  }

  return {
    /**
     * Rents the offer inside the caller's transaction (the serverless autoscaler's job): every lookup uses `tx`, as a
     * second connection would wait on SQLite. No Idempotency-Key; the caller notifies.
     */
    async createIn(tx: Tx, principal: Principal, offerId: number, body: CreateRequest): Promise<CreateReply> {
      return rent(principal, offerId, await readBody(body, principal, deps, tx), tx);
    },

    /**
     * Rents the offer. With an `Idempotency-Key`, a retry of the same request returns the first reply (no second
     * rental); the same key with a different request is a 409 `conflict`.
     */
    async create(principal: Principal, offerId: number, body: CreateRequest, idemKey?: string): Promise<CreateReply> {
      if (idemKey === undefined) {
        // Read outside the transaction: other features' lookups use their own connection.
        const opts = await readBody(body, principal, deps);
        const reply = await batcher.run((tx) => rent(principal, offerId, opts, tx));
        deps.notify();
        return reply;
      }
      if (idemKey.length === 0 || idemKey.length > IDEMPOTENCY_KEY_MAX_CHARS || !/^[\x21-\x7e]+$/.test(idemKey)) {
        throw badRequest(`Idempotency-Key must be 1-${IDEMPOTENCY_KEY_MAX_CHARS} printable characters`);
      }
      const userId = principal.user.id;
      const requestHash = sha256Hex(JSON.stringify([offerId, principal.teamId, body]));
      const replay = async (): Promise<CreateReply | undefined> => {
        const found = await store.findIdempotent(userId, idemKey, clock.now() - IDEMPOTENCY_RETENTION_S);
        if (!found) return undefined;
        if (found.request_hash !== requestHash) {
          throw new ApiError('conflict', 'this Idempotency-Key was used for a different request');
        }
        const record = JSON.parse(found.reply) as IdempotencyRecord;
        const key = secretBox.open(record.instance_api_key_sealed);
        // Sealed under another secret key (the server's was changed): the key cannot be shown again.
        if (key === null) {
          throw new ApiError('conflict', `this Idempotency-Key rented instance ${record.new_contract}, whose key cannot be shown again; use another Idempotency-Key`);
        }
        return { success: true, new_contract: record.new_contract, instance_api_key: key };
      };
      const first = await replay();
      if (first) return first;
      const opts = await readBody(body, principal, deps);
      try {
        const out = await batcher.run(async (tx) => {
          // An expired record of this key gives way to the new request.
          await store.deleteExpiredIdempotent(userId, idemKey, clock.now() - IDEMPOTENCY_RETENTION_S, tx);
          const reply = await rent(principal, offerId, opts, tx);
          const record: IdempotencyRecord = { new_contract: reply.new_contract, instance_api_key_sealed: secretBox.seal(reply.instance_api_key) };
          await store.insertIdempotent({ user_id: userId, idem_key: idemKey, request_hash: requestHash, reply: JSON.stringify(record), created_at: clock.now() }, tx);
          return reply;
        });
        deps.notify();
        return out;
      } catch (err) {
        // A concurrent request with the same key committed first (we lost the offer to it, or its unique key rolled
        // us back): its reply is ours.
        const again = await replay();
        if (again) return again;
        throw err;
      }
    },
  };
}

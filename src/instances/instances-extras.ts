/**
 * Reboot, recycle and update of an instance (docs/spec/client-compat-more.md §c). Each acts through the runtime path
 * start and stop take: the lifecycle boots the instance again in place, keeping its GPUs (null, then running, and
 * loading meanwhile while an image is pulled; compute billing stops meanwhile and resumes when it runs). The new `boot` makes the machine's agent
 * restart the container, and a new `generation` (recycle, update) makes it remove
 * the container and create one from the instance's spec as it now is (recycle: from a freshly pulled image).
 */
import type { Static } from 'typebox';
import type { Principal } from '../platform/auth.js';
import { scopeOf } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import type { SecretBox } from '../platform/crypto.js';
import type { Db, Tx } from '../platform/db/connect.js';
import type { Random } from '../platform/random.js';
import { ApiError, badRequest } from '../platform/errors.js';
import type { BillingApi } from '../billing/billing-contract.js';
import type { MachinesApi } from '../machines/machines-contract.js';
import { EnvParseError, mergeTemplateIntoRequest, type TemplateForCreate } from '../templates/templates-contract.js';
import type { Lifecycle } from './instances-lifecycle.js';
import type { TemplatesPort } from './instances-contract.js';
import {
  argsListToString, checkImage, checkImageLogin, directPortCapacity, directPortsWanted, parseEnvObject, parseRuntype, readOnstart, type Runtype,
} from './instances-request.js';
import { lockInScope } from './instances-service.js';
import type { InstancePatch, InstanceRow, InstancesStore } from './instances-store.js';
import { toInstanceObject, type InstanceObject } from './instances-view.js';
import { transact } from './instances-batch.js';
import type { GatewayAddressing } from '../gateway/gateway-contract.js';
import type { PortUrlAddressing } from '../ports/ports-contract.js';
import type { UpdateTemplateBody } from './instances-extras-schemas.js';
import { checkJupyterDir, isJupyterRuntype, mayOpenJupyter, sealedTokenFor } from './instances-jupyter.js';

export interface ExtrasDeps {
  db: Db;
  store: InstancesStore;
  lifecycle: Lifecycle;
  fleet: MachinesApi;
  billing: BillingApi;
  templates: TemplatesPort;
  secretBox: SecretBox;
  clock: Clock;
  /** The Jupyter token of an instance an update turns into a Jupyter runtype (instances-jupyter.ts). */
  random: Random;
  notify: () => void;
  /** Where the SSH gateway puts an instance's ports (the instance view's ssh_host and ssh_port). */
  config: GatewayAddressing & PortUrlAddressing;
}

type UpdateBody = Static<typeof UpdateTemplateBody>;

const given = <T>(v: T | null | undefined): v is T => v !== null && v !== undefined;
const holdsGpus = (inst: InstanceRow) => (JSON.parse(inst.gpu_indexes) as number[]).length > 0;

/** On the running path (provisioning, loading, running, or exited with its GPUs): a restart boots it again in place. */
export function restartable(inst: InstanceRow): boolean {
  return inst.intended_status === 'running' && holdsGpus(inst) && [null, 'loading', 'running', 'exited'].includes(inst.actual_status);
}

/** Why an instance cannot be restarted now (409 `conflict`), or nothing when it can. */
function refuseRestart(inst: InstanceRow, what: string): void {
  if (inst.actual_status === 'unknown' || inst.actual_status === 'offline') {
    throw new ApiError('conflict', `instance ${inst.id} is ${inst.actual_status}: its host is unreachable, so it cannot ${what} now; destroy it and rent another offer, or wait for the host`);
  }
  if (restartable(inst)) return;
  if (inst.intended_status === 'running') {
    throw new ApiError('conflict', `instance ${inst.id} is waiting for its GPUs (outbid); it starts by itself when they are free, so there is nothing to ${what}`);
  }
  throw new ApiError('conflict', `instance ${inst.id} is stopped: ${what} acts on a running instance; start it instead`);
}

/** The instance fields an update sets, from the body and the template it names. */
async function readUpdate(inst: InstanceRow, body: UpdateBody, template: TemplateForCreate | undefined, secretBox: SecretBox): Promise<InstancePatch> {
  const env = given(body.env) ? parseEnvObject(body.env) : null; // checked before a template's env is merged in
  const onstart = given(body.onstart) ? readOnstart(body.onstart) : null;
  let argsStr: string | null = null;
  if (given(body.args)) {
    if (typeof body.args === 'string') argsStr = body.args;
    else if (Array.isArray(body.args)) argsStr = argsListToString(body.args);
    else throw badRequest('body.args must be a string (the arguments, as the client sends them) or a list of strings');
  }
  if (given(body.image)) checkImage(body.image);
  if (!template) {
    if (argsStr !== null && inst.runtype !== 'args') {
      throw badRequest(`body.args: instance ${inst.id} runs runtype ${inst.runtype}, which takes no arguments; args apply to runtype args`);
    }
    const patch: InstancePatch = {};
    if (given(body.image)) patch.image = body.image;
    if (argsStr !== null) patch.args_str = argsStr;
    if (onstart !== null) patch.onstart = onstart;
    if (env) Object.assign(patch, { env: JSON.stringify(env.vars), port_maps: JSON.stringify(env.ports), hostname: env.hostname });
    return patch;
  }
  let merged;
  try {
    merged = mergeTemplateIntoRequest(template, {
      image: body.image ?? null, env: env ? (body.env as Record<string, string>) : null, onstart, args_str: argsStr,
      runtype: null, disk: null, use_jupyter_lab: null, jupyter_dir: null, image_login: null, volume_info: null,
    });
  } catch (err) {
    if (err instanceof EnvParseError) throw badRequest(`template env: ${err.message}`);
    throw err;
  }
  checkImage(merged.image);
  const runtype = parseRuntype(merged.runtype);
  checkJupyterDir(merged.jupyter_dir, 'the template\'s jupyter_dir');
  const parsed = parseEnvObject(merged.env);
  if (merged.image_login && !merged.docker_login_user) checkImageLogin(merged.image_login);
  return {
    image: merged.image,
    runtype,
    args_str: runtype === 'args' ? merged.args_str : null,
    env: JSON.stringify(parsed.vars),
    port_maps: JSON.stringify(parsed.ports),
    hostname: parsed.hostname,
    onstart: merged.onstart,
    jupyter_dir: merged.jupyter_dir,
    use_jupyter_lab: merged.use_jupyter_lab ? 1 : 0,
    // The template's registry login replaces the instance's (its image may be private); without one, none.
    image_login_sealed: merged.image_login ? secretBox.seal(merged.image_login) : null,
    template_id: merged.template_id,
    template_hash_id: merged.template_hash_id,
  };
}

export function instanceExtrasFactory(deps: ExtrasDeps) {
  const { db, store, lifecycle, fleet, billing, clock, notify } = deps;

  async function write<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    const out = await transact(db, fn);
    notify();
    return out;
  }

  /** Bumps the generation (a new container); `repull`: from a freshly pulled image. Returns the row as it now is. */
  async function newGeneration(tx: Tx, inst: InstanceRow, patch: InstancePatch, repull: boolean): Promise<InstanceRow> {
    const full = { ...patch, generation: inst.generation + 1, repull: repull ? 1 : 0 };
    await store.update(inst.id, full, tx);
    // A stopped instance gets its new container too (stopped); a running one also boots again (reboot).
    await lifecycle.desiredChanged(tx, inst.machine_id, clock.now());
    return { ...inst, ...full } as InstanceRow;
  }

  return {
    /** `PUT /instances/reboot/{id}/`: the container stops and starts again; the GPUs stay the instance's. */
    async reboot(principal: Principal, id: number): Promise<{ success: true; msg: string }> {
      return write(async (tx) => {
        const inst = await lockInScope(store, principal, id, tx);
        refuseRestart(inst, 'reboot');
        await billing.assertCredit(inst.user_id, tx);
        await lifecycle.reboot(tx, inst, clock.now(), 'rebooting: restarting the container');
        return { success: true as const, msg: `rebooting instance ${id}` };
      });
    },

    /**
     * `PUT /instances/recycle/{id}/`: the container is removed and made anew from a freshly pulled image, keeping the
     * GPUs. A stopped instance gets its new container stopped (its host's agent makes it anew and does not start it).
     */
    async recycle(principal: Principal, id: number): Promise<{ success: true; msg: string }> {
      return write(async (tx) => {
        const inst = await lockInScope(store, principal, id, tx);
        if (!restartable(inst) && inst.actual_status !== 'stopped') refuseRestart(inst, 'recycle');
        if (restartable(inst)) await billing.assertCredit(inst.user_id, tx);
        const next = await newGeneration(tx, inst, {}, true);
        if (!restartable(inst)) return { success: true as const, msg: `recycled instance ${id}: its container is made anew from a freshly pulled image, and stays stopped` };
        await lifecycle.reboot(tx, next, clock.now(), 'recycling: pulling the image again and recreating the container');
        return { success: true as const, msg: `recycling instance ${id}` };
      });
    },

    /**
     * `PUT /instances/update_template/{id}/`: a new template, image, args, env or onstart. The container is made anew
     * from the updated spec; a running instance boots again, a stopped one stays stopped. Its disk, GPUs and prices
     * do not change (a template's disk size is not applied: the disk is the instance's).
     */
    async update(principal: Principal, id: number, body: UpdateBody): Promise<{ success: true; msg: string; updated_instance: InstanceObject }> {
      if (given(body.id) && body.id !== id) throw badRequest(`body.id ${body.id} is not the instance in the path (${id})`);
      const fields = ['template_id', 'template_hash_id', 'image', 'args', 'env', 'onstart'] as const;
      if (!fields.some((f) => given(body[f]))) throw badRequest(`body: give at least one of ${fields.join(', ')}`);
      if (given(body.template_id) && given(body.template_hash_id)) throw badRequest('body: give template_id or template_hash_id, not both');
      const scope = scopeOf(principal);
      let template: TemplateForCreate | undefined;
      if (given(body.template_id)) {
        template = await deps.templates.getForCreateById(body.template_id, scope);
        if (!template) throw new ApiError('not_found', `template ${body.template_id} not found`);
      } else if (given(body.template_hash_id)) {
        template = await deps.templates.getForCreate(body.template_hash_id, scope);
        if (!template) throw new ApiError('not_found', `template ${JSON.stringify(body.template_hash_id)} not found`);
      }
      return write(async (tx) => {
        const inst = await lockInScope(store, principal, id, tx);
        const patch = await readUpdate(inst, body, template, deps.secretBox);
        // A template that makes it a Jupyter runtype gives it a token, once (it keeps the one it has).
        if (patch.runtype && isJupyterRuntype(patch.runtype) && !inst.jupyter_token_sealed) {
          patch.jupyter_token_sealed = sealedTokenFor(patch.runtype, deps.random, deps.secretBox);
        }
        const machine = await fleet.machine(inst.machine_id!, tx);
        const after = { ...inst, ...patch } as InstanceRow;
        if (machine) {
          const wanted = directPortsWanted(after.runtype as Runtype, JSON.parse(after.port_maps) as string[]);
          const capacity = directPortCapacity(machine, inst.num_gpus);
          if (wanted > capacity) {
            throw badRequest(`instance ${id} has ${capacity} direct port${capacity === 1 ? '' : 's'}; runtype ${after.runtype} and the -p mappings need ${wanted}: use a proxy runtype or fewer -p mappings`);
          }
        }
        const running = restartable(inst);
        if (running) await billing.assertCredit(inst.user_id, tx);
        const next = await newGeneration(tx, inst, patch, false);
        const now = clock.now();
        if (running) await lifecycle.reboot(tx, next, now, 'updating: recreating the container from the new spec');
        const row = (await store.lock(id, tx))!;
        return {
          success: true as const,
          msg: running ? `instance ${id} updated: its container is being made anew` : `instance ${id} updated: the new spec applies when it starts`,
          updated_instance: toInstanceObject(row, machine, now, deps.config, mayOpenJupyter(principal) ? deps.secretBox : null),
        };
      });
    },
  };
}

export type InstanceExtras = ReturnType<typeof instanceExtrasFactory>;

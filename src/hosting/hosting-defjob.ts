/**
 * Default jobs run (client-compat-more.md §a "create_bids / defjob"): the host's own container on its machine's idle
 * GPUs, displaced by paying renters. It runs as an interruptible (bid) instance of the host's on the whole machine,
 * bidding the default job's `price_gpu` per GPU, so the marketplace's own rules do the rest: a renter's on-demand
 * rental, or a higher bid, outbids it (it stops, still meant to run) and it resumes by itself when the GPUs are free
 * again (instances-lifecycle.ts `resumeWaiting`). The host is charged its bid like any renter and earns it back less
 * the service fee. While it cannot be placed (the machine unlisted or busy, the bid under the machine's minimum, the
 * host out of credit) the reason is kept, and a check every DEFJOB_CHECK_S tries again; it also re-makes an instance
 * the host destroyed by hand.
 */
import type { Principal } from '../platform/auth.js';
import type { Tx } from '../platform/db/connect.js';
import { inSavepoint } from '../platform/db/savepoint.js';
import type { JobContext, Scheduler } from '../platform/scheduler.js';
import { ApiError } from '../platform/errors.js';
import { usersContract } from '../users/users-contract.js';
import { offerIdOf } from '../machines/machines-offers-contract.js';
import type { MachinesService } from '../machines/machines-service.js';
import type { CreateRequest } from '../instances/instances-contract.js';
import type { HostingStore } from './hosting-store.js';

export const JOB_DEFJOB = 'hosting.defjob';
/** How often a default job that is not placed is tried again, and a placed one checked. */
export const DEFJOB_CHECK_S = 60;
export const DEFJOB_LABEL = 'default job';
const defjobRef = (machineId: number) => `defjob:${machineId}`;

/** What default jobs need of the instances feature (instances-module.ts). */
export interface DefjobInstancesPort {
  createIn(tx: Tx, principal: Principal, offerId: number, body: CreateRequest): Promise<{ new_contract: number }>;
  destroyIn(tx: Tx, principal: Principal, id: number): Promise<unknown>;
  liveIds(tx: Tx, ids: number[]): Promise<number[]>;
}

export interface DefjobDeps {
  hosting: HostingStore;
  scheduler: Scheduler;
  fleet: Pick<MachinesService['hosting'], 'machine'>;
  instances: DefjobInstancesPort;
}

/** The host acting on its own machine (as the serverless autoscaler acts for an endpoint's owner). */
async function hostPrincipal(tx: Tx, userId: number): Promise<Principal | undefined> {
  const user = await usersContract.byId(tx, userId);
  if (!user) return undefined;
  const key = { id: 0, user_id: user.id, team_id: null, kind: 'defjob', instance_id: null, permissions: null } as unknown as Principal['key'];
  return { user, key, permissions: null, teamId: null, presentedKey: '' };
}

export function defjobRunner({ hosting, scheduler, fleet, instances }: DefjobDeps) {
  /** Whether the job's instance is live; none recorded is not. */
  async function running(tx: Tx, instanceId: number | null): Promise<boolean> {
    return instanceId !== null && (await instances.liveIds(tx, [instanceId])).length > 0;
  }

  /** Places the machine's default job unless its instance is live, and schedules the next check. */
  async function place(tx: Tx, machineId: number, now: number): Promise<void> {
    const job = await hosting.defjobOf(tx, machineId);
    if (!job) return;
    if (!(await running(tx, job.instance_id))) {
      const machine = await fleet.machine(machineId, tx);
      const host = await hostPrincipal(tx, job.user_id);
      let outcome: { instance_id: number | null; status_msg: string | null };
      if (!machine || machine.record.deleted || !host) {
        outcome = { instance_id: null, status_msg: 'the machine or its host is gone' };
      } else {
        const numGpus = machine.record.num_gpus;
        const body: CreateRequest = {
          image: job.image,
          label: DEFJOB_LABEL,
          price: (job.price_gpu_micro * numGpus) / 1e6,
          ...(job.args ? { args: JSON.parse(job.args) as string[] } : {}),
        };
        const got = await inSavepoint(tx, () => instances.createIn(tx, host, offerIdOf(machineId, numGpus), body));
        outcome = got instanceof ApiError
          ? { instance_id: null, status_msg: `not running: ${got.message}` }
          : { instance_id: got.new_contract, status_msg: null };
      }
      await hosting.setDefjobRun(tx, machineId, outcome);
    }
    await scheduler.schedule(JOB_DEFJOB, now + DEFJOB_CHECK_S, { machine_id: machineId }, { tx, ref: defjobRef(machineId) });
  }

  /** Ends the machine's default job: its instance is destroyed and its checks stop. The row is the caller's. */
  async function end(tx: Tx, machineId: number): Promise<void> {
    await scheduler.cancel(defjobRef(machineId), { tx });
    const job = await hosting.defjobOf(tx, machineId);
    if (!job || !(await running(tx, job.instance_id))) return;
    const host = await hostPrincipal(tx, job.user_id);
    if (host) await instances.destroyIn(tx, host, job.instance_id!);
  }

  scheduler.register(JOB_DEFJOB, async (payload: { machine_id: number }, { tx, now }: JobContext) => place(tx, payload.machine_id, now));

  return { place, end };
}

export type DefjobRunner = ReturnType<typeof defjobRunner>;

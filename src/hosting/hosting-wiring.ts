import type { Config } from '../config.js';
import type { Clock } from '../platform/clock.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { Store, Tx } from '../platform/db/connect.js';
import type { MachinesService } from '../machines/machines-service.js';
import type { BillingService } from '../billing/billing-service.js';
import { hostingServiceFactory, type HostingDeps } from './hosting-service.js';
import { hostingEarningsFactory, type EarningsDeps } from './hosting-earnings.js';
import type { DefjobInstancesPort } from './hosting-defjob.js';

/** The hosting feature's services over the fleet, instances and billing (called once from services.ts). */
export function hostingWiring(d: {
  store: Store;
  clock: Clock;
  scheduler: Scheduler;
  config: Pick<Config, 'hostServiceFee'>;
  fleet: Pick<MachinesService, 'hosting'>;
  /** The instances feature (instances-module.ts): what default jobs rent, the instances on machines, its event streams' wake-up. */
  instances: DefjobInstancesPort & { onMachines: HostingDeps['instancesOn']; real: { notify: () => void }; maintenance?: HostingDeps['maintenance'] };
  billing: Pick<BillingService, 'dailyCharges'>;
  /** The billing contracts of the volumes made on machines (their storage is the host's too). */
  volumesOn: EarningsDeps['volumesOn'];
  /** A machine was deleted (inside its transaction): e.g. its agent's key is revoked. */
  onMachineDeleted?: (tx: Tx, machineId: number) => Promise<void>;
  /** `list machine`'s `vol_size` and `vol_price`: the machine's volume offer (src/volumes/). */
  volumeAsk?: HostingDeps['volumeAsk'];
  /** Issue 33 (telemetry): the machines' GPUs as their agents last sampled them. */
  gpuStates?: HostingDeps['gpuStates'];
}) {
  const hosting = hostingServiceFactory({
    store: d.store, clock: d.clock, scheduler: d.scheduler, fleet: d.fleet.hosting, instancesOn: d.instances.onMachines, onDeleted: d.onMachineDeleted,
    volumeAsk: d.volumeAsk,
    defjobInstances: { createIn: d.instances.createIn, destroyIn: d.instances.destroyIn, liveIds: d.instances.liveIds },
    notify: d.instances.real.notify,
    gpuStates: d.gpuStates,
    maintenance: d.instances.maintenance,
  });
  const hostingEarnings = hostingEarningsFactory({
    clock: d.clock,
    fleet: d.fleet.hosting,
    hosting,
    instancesOn: d.instances.onMachines,
    volumesOn: d.volumesOn,
    dailyCharges: (sources, from, to) => d.billing.dailyCharges(sources, from, to),
    serviceFee: d.config.hostServiceFee,
  });
  return { hosting, hostingEarnings };
}

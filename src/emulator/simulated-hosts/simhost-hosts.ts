/**
 * The instances feature's host port (instances-hosts-contract.ts) in emulator mode: a machine run by `gpuplane agent`
 * is asked through its agent (`real`, the agent server's port), any other is one of the emulator's simulated hosts,
 * which answers here, at once: `execute` as busybox would in an empty container (simhost-execute.ts), `request_logs`
 * with the boot as the instance's history tells it (simhost-boot-log.ts). A snapshot it refuses: it has no container
 * to commit and push, and a fake success would leave the renter waiting for an image that never comes.
 */
import { ApiError } from '../../platform/errors.js';
import type { Tx } from '../../platform/db/connect.js';
import type { MachinesApi } from '../../machines/machines-contract.js';
import type { InstanceHostsPort, InstancesForHosts } from '../../instances/instances-hosts-contract.js';
import { simulatedOutput } from './simhost-execute.js';
import { bootLog } from './simhost-boot-log.js';

export interface EmulatedHostsDeps {
  real: InstanceHostsPort;
  fleet: Pick<MachinesApi, 'machine'>;
  instances: Pick<InstancesForHosts, 'findAny' | 'eventsOf'>;
}

export function emulatedHostsPort({ real, fleet, instances }: EmulatedHostsDeps): InstanceHostsPort {
  const isReal = async (machineId: number | null, tx?: Tx) => machineId !== null && (await fleet.machine(machineId, tx))?.agent === true;

  return {
    async execute(tx, cmd) {
      if (await isReal(cmd.machineId, tx)) return real.execute(tx, cmd);
      return simulatedOutput(cmd.argv, cmd.instanceCreatedAt);
    },

    async assertCanSnapshot(tx, req) {
      if (await isReal(req.machineId, tx)) return real.assertCanSnapshot(tx, req);
      throw new ApiError(
        'service_unavailable',
        `take snapshot needs a real host: instance ${req.instanceId} runs on a simulated machine (emulator), which has no container to commit and push; ` +
          'snapshots work on machines run by gpuplane agent',
      );
    },

    async logsRequested(req) {
      // A simulated host needs no word of it: its log is there already.
      if (await isReal(req.machineId)) await real.logsRequested(req);
    },

    async logText(req) {
      const inst = await instances.findAny(req.instanceId);
      if (!inst) throw new ApiError('not_found', 'no such log, or it expired');
      if (await isReal(inst.machine_id)) return real.logText(req);
      const lines = bootLog(inst, await instances.eventsOf(inst.id));
      let out = req.filter ? lines.filter((l) => l.includes(req.filter!)) : lines;
      if (req.tail !== null) out = out.slice(-req.tail);
      return out.join('\n') + (out.length ? '\n' : '');
    },
  };
}

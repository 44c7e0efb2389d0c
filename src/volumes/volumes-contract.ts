/**
 * What other features use of volumes: the agent server's desired state reads each machine's live volumes and where its
 * instances mount them (volumes-service.ts `desiredOn`), and its fingerprint reads the volumes' part.
 */
import type { DesiredVolumeT, VolumeMountT } from '../protocol/agent-protocol-schemas.js';
import type { Tx } from '../platform/db/connect.js';

export { liveVolumeOn, volumeFingerprintPart } from './volumes-store.js';

/** A machine's volumes as its agent gets them: each live one, and each instance's mounts. */
export interface MachineVolumes {
  volumes: DesiredVolumeT[];
  mounts: Map<number, VolumeMountT[]>;
}

export type MachineVolumesRead = (machineId: number, tx: Tx) => Promise<MachineVolumes>;

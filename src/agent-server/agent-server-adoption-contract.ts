/**
 * Issue 34 (real containers behind simulated machines, src/emulator/emu-containers/): the emulator gives a simulated
 * machine what a registered host has, an agent row with its machine key's digest, so that every other part treats it
 * as a real host (desired-state polls, reports, the tunnel, execute, logs) and the real agent it runs for it in-process
 * authenticates as any agent does; and takes it back when the emulator resets or stops. The rows are the agent
 * server's own (agent_machines); only this module lets another feature write them.
 */
import type { Db, Tx } from '../platform/db/connect.js';
import { agentStore } from './agent-server-store.js';

export interface AdoptedAgentRow {
  machineId: number;
  /** Names the adoption; it starts with the adopter's prefix, so that `release` removes only what it made. */
  registrationId: string;
  /** SHA-256 of the machine key, hex (the key itself is written only to the agent's state directory). */
  keyHash: string;
  agentVersion: string;
  /** The declared hardware, as JSON (the agent's registration body would carry it). */
  hardware: string;
  now: number;
}

export function agentAdoption(db: Db) {
  const agents = agentStore(db);
  return {
    /** The agent row for an existing machine, in the adopting transaction. */
    adopt: (tx: Tx, r: AdoptedAgentRow) =>
      agents.insert({
        machine_id: r.machineId, user_id: 0, registration_id: r.registrationId, key_hash: r.keyHash, agent_version: r.agentVersion,
        hardware_declared: 1, hardware: r.hardware, hardware_pending: 0, last_report_at: null, offline: 0, created_at: r.now,
        gpu_telemetry: null, gpu_telemetry_at: null, gpu_fault: null,
      }, tx),
    /** The machine's agent row as it stands: its registration id and key digest (null once revoked). */
    async registration(machineId: number, tx?: Tx): Promise<{ registrationId: string; keyHash: string | null } | undefined> {
      const row = await agents.byMachine(machineId, tx);
      return row && { registrationId: row.registration_id, keyHash: row.key_hash };
    },
    /** Removes the machine's agent row if it is one this adopter made (its registration id starts with `prefix`). */
    release: (tx: Tx, machineId: number, prefix: string) => agents.deleteRegisteredAs(machineId, prefix, tx),
  };
}

/**
 * Who owns a container on a shared Docker daemon (issue 29 item 6). Two control planes' agents on one daemon (a
 * staging and a production server, two CI jobs) each number their first machine alike, so the machine id alone let
 * one agent remove the other's containers as orphans. The owner id is derived from the registration id: the agent
 * draws that once per registration (24 random bytes, agent-system.ts) and keeps it in its state directory, so it is
 * unique to the registration and therefore to the server too; no server identity is needed beside it.
 */
import { createHash } from 'node:crypto';

/** Hex characters of an owner id: 64 bits, far from any collision among the agents of one daemon. */
const OWNER_HEX_CHARS = 16;

/**
 * The owner id of a registration. A digest, not the id itself: the registration id is what a retried registration
 * names its machine by, and labels are readable by anyone who can list the daemon's containers.
 */
export function ownerId(registrationId: string): string {
  return createHash('sha256').update(`gpuplane-agent-owner:${registrationId}`).digest('hex').slice(0, OWNER_HEX_CHARS);
}

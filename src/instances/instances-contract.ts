/**
 * What other features use of the instances feature: the creation body they rent with (hosting's default jobs, the
 * serverless autoscaler), the ports they implement for it (templates, volumes), and the shapes of what it hands them
 * (hosting's placed instances, the instance a deposit names). The ports only the root wires (account environment,
 * SSH keys) stay in instances-ports.ts; the hosts of instances' machines meet the feature in instances-hosts-contract.ts.
 */
import type { Static } from 'typebox';
import type { Principal, Scope } from '../platform/auth.js';
import type { Tx } from '../platform/db/connect.js';
import type { TemplateForCreate } from '../templates/templates-contract.js';
import type { CreateBody } from './instances-schemas.js';

/** The creation body as the route's schema admits it (types and bounds checked there; the rules it cannot state here). */
export type CreateRequest = Static<typeof CreateBody>;

/** Spec `volume_info` of a creation: the volume to attach (or create and attach) and where to mount it. */
export interface VolumeInfo {
  volume_id: number;
  mount_path: string;
  create_new: boolean;
  size: number | null;
  name: string | null;
}

/** The templates feature, as a creation uses it. */
export interface TemplatesPort {
  /** The template with this hash_id that the scope may use (own, team's or public), credentials decrypted. */
  getForCreate(hashId: string, scope: Scope, tx?: Tx): Promise<TemplateForCreate | undefined>;
  /** Counts an instance created from it (`count_created`, `recent_create_date`). */
  recordUse(templateId: number, at: number, tx?: Tx): Promise<void>;
  /** The same as getForCreate, by the template's numeric id (`update instance --template_id`). */
  getForCreateById(id: number, scope: Scope, tx?: Tx): Promise<TemplateForCreate | undefined>;
}

/**
 * The volumes feature: attach (or create and attach) the request's `volume_info` to the new instance, inside the
 * creation transaction; throw ApiError for a volume that does not exist or is not the caller's.
 */
export interface VolumesPort {
  /** Returns the volume as the instance shows it (for `create_new`, the new volume's id in place of the offer's). */
  attachAtCreate(tx: Tx, req: { instanceId: number; machineId: number; scope: Scope; volume: VolumeInfo }): Promise<VolumeInfo | void>;
  /** Detaches whatever the instance had attached (destroy). */
  detachAll(tx: Tx, instanceId: number): Promise<void>;
}

/** An instance as the hosting feature sees it: where it ran and for whom (no renter data beyond ids). */
export interface PlacedInstance {
  id: number;
  machine_id: number;
  user_id: number;
  team_id: number | null;
  live: boolean;
}

/** What the deposits feature reads of an instance: who pays it, what it costs, where it runs. */
export interface OwnedInstance {
  id: number;
  /** Its billing contract (`instance-<id>`). */
  contract: string;
  user_id: number;
  machine_id: number | null;
  is_bid: boolean;
  /** Its list rate while running, GPUs plus disk, micro-dollars per hour. */
  rate_micro_per_hour: number;
}

/** The instance a prepay or deposit names, in the caller's scope (instances-queries.ts). */
export interface OwnedInstances {
  /** The caller's live instance, locked for the caller's transaction (404 otherwise; an instance key: its own only). */
  lockOwned(principal: Principal, id: number, tx: Tx): Promise<OwnedInstance>;
  findOwned(principal: Principal, id: number): Promise<OwnedInstance>;
}

import type { Generated } from 'kysely';

/**
 * A host's default job on a machine (`set defjob`, `PUT /machines/create_bids/`): its own container for idle GPUs at
 * a price, displaced by paying renters. One per machine. Prices in micro-dollars; `args` a JSON list or null.
 */
export interface HostingDefjobsTable {
  id: Generated<number>;
  machine_id: number;
  user_id: number;
  price_gpu_micro: number;
  price_inetu_micro: number;
  price_inetd_micro: number;
  image: string;
  args: string | null;
  created_at: number;
  /** The host's bid instance running the job (hosting-defjob.ts); null while none could be placed. */
  instance_id: number | null;
  /** Why the job is not running, when it is not. */
  status_msg: string | null;
}

export interface HostingTables {
  hosting_defjobs: HostingDefjobsTable;
}

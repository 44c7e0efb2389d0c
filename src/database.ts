import { openStore, type OpenOptions, type Store } from './platform/db/connect.js';
import { MIGRATIONS } from './migrations/index.js';
import type { UsersTables } from './users/users-tables.js';
import type { KeysTables } from './keys/keys-tables.js';
import type { EmulatorTables } from './emulator/emulator-tables.js';
import type { BillingTables } from './billing/billing-tables.js';
import type { TeamsTables } from './teams/teams-tables.js';
import type { TemplatesTables } from './templates/templates-tables.js';
import type { SshKeysTables } from './ssh-keys/ssh-keys-tables.js';
import type { InstancesTables } from './instances/instances-tables.js';
import type { MachinesTables } from './machines/machines-tables.js';
import type { TfaTables } from './tfa/tfa-tables.js';
import type { VolumesTables } from './volumes/volumes-tables.js';
import type { ServerlessTables } from './serverless/serverless-tables.js';
import type { EnvVarsTables } from './env-vars/env-vars-tables.js';
import type { AuditTables } from './audit/audit-tables.js';
import type { AgentTables } from './agent-server/agent-server-tables.js';
import type { HostingTables } from './hosting/hosting-tables.js';
import type { ScheduledJobsTables } from './scheduled-jobs/scheduled-jobs-tables.js';
import type { SubaccountsTables } from './subaccounts/subaccounts-tables.js';
import type { BenchmarksTables } from './benchmarks/benchmarks-tables.js';
import type { ClustersTables } from './clusters/clusters-tables.js';
import type { SimhostTables } from './emulator/simulated-hosts/simhost-tables.js';
import type { LoginTables } from './login/login-tables.js';
import type { TunnelsTables } from './tunnels/tunnels-tables.js';
import type { PortsTables } from './ports/ports-tables.js';

/**
 * The database of the composition root: every feature's tables and their migrations. A feature declares its tables
 * in `<feature>-tables.ts`, added here with one `extends` entry, and creates them in a migration of its own,
 * `src/migrations/<next number>-<what it does>.ts`, listed at the end of src/migrations/index.ts.
 */
declare module './platform/db/schema.js' {
  interface Database
    extends UsersTables, KeysTables, EmulatorTables, BillingTables, TeamsTables, TemplatesTables, SshKeysTables,
      InstancesTables, MachinesTables, TfaTables, VolumesTables, ServerlessTables, EnvVarsTables, AuditTables, AgentTables, HostingTables,
      ScheduledJobsTables, SubaccountsTables, BenchmarksTables, ClustersTables, SimhostTables, LoginTables, TunnelsTables, PortsTables {}
}

/** Opens (and migrates) gpuplane's database. */
export function openDatabase(url: string, options: Omit<OpenOptions, 'migrations'> = {}): Promise<Store> {
  return openStore(url, { ...options, migrations: MIGRATIONS });
}

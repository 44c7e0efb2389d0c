import { openStore, type OpenOptions, type Store } from './platform/db/connect.js';
import type { MigrationList } from './platform/db/migrations.js';
import { foundationMigration } from './migration-0001-foundation.js';
import { fleetMigration } from './machines/machines-migration.js';
import { templatesMigration } from './templates/templates-migration.js';
import { sshKeysMigration } from './ssh-keys/ssh-keys-migration.js';
import { instancesMigration } from './instances/instances-migration.js';
import { tfaMigration } from './tfa/tfa-migration.js';
import { teamsMigration } from './teams/teams-migration.js';
import { billingMigration } from './billing/billing-migration.js';
import { volumesMigration } from './volumes/volumes-migration.js';
import { serverlessMigration } from './serverless/serverless-migration.js';
import { fleetHeartbeatMigration } from './machines/machines-heartbeat-migration.js';
import { fleetVersionMigration } from './machines/machines-version-migration.js';
import { billingRatesMigration } from './billing/billing-rates-migration.js';
import { fleetHostUserMigration } from './machines/machines-host-user-migration.js';
import { agentMigration } from './agent-server/agent-server-migration.js';
import { agentNotifyMigration } from './agent-server/agent-server-notify-migration.js';
import { hostingDefjobRunsMigration } from './hosting/hosting-defjob-migration.js';
import { hostingMigration } from './hosting/hosting-migration.js';
import { envVarsMigration } from './env-vars/env-vars-migration.js';
import { billingPaymentsMigration } from './billing/billing-payments-migration.js';
import { auditMigration } from './audit/audit-migration.js';
import { instancesIdempotencySealedMigration } from './instances/instances-idempotency-migration.js';
import { instancesAccountEnvMigration } from './instances/instances-account-env-migration.js';
import { serverlessStateMigration } from './serverless/serverless-state-migration.js';
import { prepayBenchmarksMigration } from './migration-0022-prepay-benchmarks.js';
import { instancesExtrasMigration } from './instances/instances-extras-migration.js';
import { serverlessSdkMigration } from './serverless/serverless-sdk-migration.js';
import { instancesLiveMigration } from './instances/instances-live-migration.js';
import { keysLiveMigration } from './keys/keys-live-migration.js';
import { simhostMigration } from './emulator/simulated-hosts/simhost-migration.js';
import { scheduledJobsMigration } from './scheduled-jobs/scheduled-jobs-migration.js';
import { subaccountsMigration } from './subaccounts/subaccounts-migration.js';
import { loginThrottlesMigration } from './login/login-migration.js';
import { agentHardwarePendingMigration } from './agent-server/agent-server-pending-migration.js';
import type { UsersTables } from './users/users-tables.js';
import type { KeysTables } from './keys/keys-tables.js';
import type { OutboxTables } from './emulator/outbox-tables.js';
import type { BillingTables } from './billing/billing-tables.js';
import type { TeamsTables } from './teams/teams-tables.js';
import type { TemplatesTables } from './templates/templates-tables.js';
import type { SshKeysTables } from './ssh-keys/ssh-keys-tables.js';
import type { InstancesTables } from './instances/instances-tables.js';
import type { FleetTables } from './machines/machines-tables.js';
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

/**
 * The database of the composition root: every feature's tables and migrations. A feature declares its tables in
 * `<feature>-tables.ts` and creates them in `<feature>-migration.ts`; it is added here with one `extends` entry and
 * one line at the end of MIGRATIONS.
 */
declare module './platform/db/schema.js' {
  interface Database
    extends UsersTables, KeysTables, OutboxTables, BillingTables, TeamsTables, TemplatesTables, SshKeysTables,
      InstancesTables, FleetTables, TfaTables, VolumesTables, ServerlessTables, EnvVarsTables, AuditTables, AgentTables, HostingTables,
      ScheduledJobsTables, SubaccountsTables, BenchmarksTables, ClustersTables, SimhostTables, LoginTables {}
}

/**
 * Applied in this order. Names are recorded in each database: never rename or reorder one, and give a new one the
 * next number. Up to 0012 they were once listed out of order, so databases of that time may have applied them in
 * another order (each creates only its own feature's tables, so that is safe).
 */
export const MIGRATIONS: MigrationList = {
  migrations: [
    ['0001_foundation', foundationMigration],
    ['0002_fleet', fleetMigration],
    ['0003_templates', templatesMigration],
    ['0004_ssh_keys', sshKeysMigration],
    ['0005_instances', instancesMigration],
    ['0006_tfa', tfaMigration],
    ['0007_teams', teamsMigration],
    ['0008_billing', billingMigration],
    ['0009_volumes', volumesMigration],
    ['0010_serverless', serverlessMigration],
    ['0011_fleet_heartbeat', fleetHeartbeatMigration],
    ['0012_billing_rates', billingRatesMigration],
    ['0013_fleet_host_user', fleetHostUserMigration],
    ['0014_agent', agentMigration],
    ['0015_hosting', hostingMigration],
    ['0016_env_vars', envVarsMigration],
    ['0017_billing_payments', billingPaymentsMigration],
    ['0018_audit', auditMigration],
    ['0019_instances_idempotency_sealed', instancesIdempotencySealedMigration],
    ['0020_instances_account_env', instancesAccountEnvMigration],
    ['0021_instances_extras', instancesExtrasMigration],
    ['0022_prepay_benchmarks', prepayBenchmarksMigration],
    ['0023_scheduled_jobs', scheduledJobsMigration],
    ['0024_subaccounts', subaccountsMigration],
    ['0025_serverless_sdk', serverlessSdkMigration],
    ['0026_serverless_endpoint_state', serverlessStateMigration],
    ['0028_fleet_version_at_commit', fleetVersionMigration],
    ['0030_agent_desired_notify', agentNotifyMigration],
    ['0031_hosting_defjob_runs', hostingDefjobRunsMigration],
    ['0032_simhost', simhostMigration],
    ['0033_instances_live', instancesLiveMigration],
    ['0034_keys_live', keysLiveMigration],
    ['0045_login_throttles', loginThrottlesMigration],
    ['0048_agent_hardware_pending', agentHardwarePendingMigration],
  ],
  lastUnordered: '0012_billing_rates',
};

/** Opens (and migrates) gpuplane's database. */
export function openDatabase(url: string, options: Omit<OpenOptions, 'migrations'> = {}): Promise<Store> {
  return openStore(url, { ...options, migrations: MIGRATIONS });
}

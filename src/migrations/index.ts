// The database's migrations, in the order they are applied: one file each, named by its number and what it does.
// A new migration takes the next number and goes at the end; a migration that has been released is never changed
// (databases have applied it), and a recorded name changes only through renamed.ts.
import type { DialectMigration, MigrationList } from '../platform/db/migrations.js';
import { RENAMED } from './renamed.js';
import { usersMigration } from './0001-users.js';
import { apiKeysMigration } from './0002-api-keys.js';
import { jobsAndKvMigration } from './0003-jobs-and-kv.js';
import { outboxMigration } from './0004-outbox.js';
import { machinesMigration } from './0005-machines.js';
import { billingMigration } from './0006-billing.js';
import { templatesMigration } from './0007-templates.js';
import { sshKeysMigration } from './0008-ssh-keys.js';
import { instancesMigration } from './0009-instances.js';
import { teamsMigration } from './0010-teams.js';
import { tfaMigration } from './0011-tfa.js';
import { faultCountersMigration } from './0012-fault-counters.js';
import { sessionsMigration } from './0013-sessions.js';
import { volumesMigration } from './0014-volumes.js';
import { serverlessMigration } from './0015-serverless.js';
import { machinesHeartbeatMigration } from './0016-machines-heartbeat.js';
import { billingRatesMigration } from './0017-billing-rates.js';
import { machinesHostUserMigration } from './0018-machines-host-user.js';
import { agentMachinesMigration } from './0019-agent-machines.js';
import { machinesListingMigration } from './0020-machines-listing.js';
import { hostingDefjobsMigration } from './0021-hosting-defjobs.js';
import { envVarsMigration } from './0022-env-vars.js';
import { billingPaymentsMigration } from './0023-billing-payments.js';
import { auditMigration } from './0024-audit.js';
import { instancesIdempotencySealedMigration } from './0025-instances-idempotency-sealed.js';
import { instancesAccountEnvMigration } from './0026-instances-account-env.js';
import { instancesExtrasMigration } from './0027-instances-extras.js';
import { billingDepositsMigration } from './0028-billing-deposits.js';
import { benchmarksMigration } from './0029-benchmarks.js';
import { clustersMigration } from './0030-clusters.js';
import { volumesUnlistedMigration } from './0031-volumes-unlisted.js';
import { scheduledJobsMigration } from './0032-scheduled-jobs.js';
import { subaccountsMigration } from './0033-subaccounts.js';
import { serverlessSdkMigration } from './0034-serverless-sdk.js';
import { serverlessEndpointStateMigration } from './0035-serverless-endpoint-state.js';
import { machinesVersionAtCommitMigration } from './0036-machines-version-at-commit.js';
import { agentDesiredNotifyMigration } from './0037-agent-desired-notify.js';
import { hostingDefjobRunsMigration } from './0038-hosting-defjob-runs.js';
import { simulatedHostsMigration } from './0039-simulated-hosts.js';
import { instancesBootTimersDroppedMigration } from './0040-instances-boot-timers-dropped.js';
import { instancesLiveMigration } from './0041-instances-live.js';
import { apiKeysLiveMigration } from './0042-api-keys-live.js';
import { loginThrottlesMigration } from './0043-login-throttles.js';
import { agentHardwarePendingMigration } from './0044-agent-hardware-pending.js';
import { instancesApiKeySealedMigration } from './0045-instances-api-key-sealed.js';
import { agentTunnelsMigration } from './0046-agent-tunnels.js';
import { teamKeysNotifyMigration } from './0047-team-keys-notify.js';
import { instancesJupyterTokenMigration } from './0048-instances-jupyter-token.js';
import { portTokensMigration } from './0049-port-tokens.js';
import { agentGpuHealthMigration } from './0050-agent-gpu-health.js'; // issue 33 (telemetry)
import { volumeAsksMigration } from './0051-volume-asks.js'; // issue 33 (volumes)
import { serverlessWorkerReportsMigration } from './0052-serverless-worker-reports.js'; // issue 33 (serverless)
import { emuRequestFaultsMigration } from './0053-emu-request-faults.js'; // issue 34 (request-faults)
import { emuHostEventsMigration } from './0054-emu-host-events.js'; // issue 34 (events)
import { emuTransitionsMigration } from './0055-emu-transitions.js'; // issue 34 (transitions)

/**
 * Each migration with the one feature that owns what it makes: its folder under src/ (`platform` for the platform's
 * own tables), the feature that alone writes those tables (docs/DEVELOPING.md, "Layers and their rules").
 */
export const OWNED_MIGRATIONS: ReadonlyArray<readonly [name: string, owner: string, migration: DialectMigration]> = [
  ['0001_users', 'users', usersMigration],
  ['0002_api_keys', 'keys', apiKeysMigration],
  ['0003_jobs_and_kv', 'platform', jobsAndKvMigration],
  ['0004_outbox', 'emulator', outboxMigration],
  ['0005_machines', 'machines', machinesMigration],
  ['0006_billing', 'billing', billingMigration],
  ['0007_templates', 'templates', templatesMigration],
  ['0008_ssh_keys', 'ssh-keys', sshKeysMigration],
  ['0009_instances', 'instances', instancesMigration],
  ['0010_teams', 'teams', teamsMigration],
  ['0011_tfa', 'tfa', tfaMigration],
  ['0012_fault_counters', 'emulator', faultCountersMigration],
  ['0013_sessions', 'login', sessionsMigration],
  ['0014_volumes', 'volumes', volumesMigration],
  ['0015_serverless', 'serverless', serverlessMigration],
  ['0016_machines_heartbeat', 'machines', machinesHeartbeatMigration],
  ['0017_billing_rates', 'billing', billingRatesMigration],
  ['0018_machines_host_user', 'machines', machinesHostUserMigration],
  ['0019_agent_machines', 'agent-server', agentMachinesMigration],
  ['0020_machines_listing', 'machines', machinesListingMigration],
  ['0021_hosting_defjobs', 'hosting', hostingDefjobsMigration],
  ['0022_env_vars', 'env-vars', envVarsMigration],
  ['0023_billing_payments', 'billing', billingPaymentsMigration],
  ['0024_audit', 'audit', auditMigration],
  ['0025_instances_idempotency_sealed', 'instances', instancesIdempotencySealedMigration],
  ['0026_instances_account_env', 'instances', instancesAccountEnvMigration],
  ['0027_instances_extras', 'instances', instancesExtrasMigration],
  ['0028_billing_deposits', 'billing', billingDepositsMigration],
  ['0029_benchmarks', 'benchmarks', benchmarksMigration],
  ['0030_clusters', 'clusters', clustersMigration],
  ['0031_volumes_unlisted', 'volumes', volumesUnlistedMigration],
  ['0032_scheduled_jobs', 'scheduled-jobs', scheduledJobsMigration],
  ['0033_subaccounts', 'subaccounts', subaccountsMigration],
  ['0034_serverless_sdk', 'serverless', serverlessSdkMigration],
  ['0035_serverless_endpoint_state', 'serverless', serverlessEndpointStateMigration],
  ['0036_machines_version_at_commit', 'machines', machinesVersionAtCommitMigration],
  ['0037_agent_desired_notify', 'agent-server', agentDesiredNotifyMigration],
  ['0038_hosting_defjob_runs', 'hosting', hostingDefjobRunsMigration],
  ['0039_simulated_hosts', 'emulator/simulated-hosts', simulatedHostsMigration],
  ['0040_instances_boot_timers_dropped', 'instances', instancesBootTimersDroppedMigration],
  ['0041_instances_live', 'instances', instancesLiveMigration],
  ['0042_api_keys_live', 'keys', apiKeysLiveMigration],
  ['0043_login_throttles', 'login', loginThrottlesMigration],
  ['0044_agent_hardware_pending', 'agent-server', agentHardwarePendingMigration],
  ['0045_instances_api_key_sealed', 'instances', instancesApiKeySealedMigration],
  ['0046_agent_tunnels', 'tunnels', agentTunnelsMigration],
  ['0047_team_keys_notify', 'agent-server', teamKeysNotifyMigration],
  ['0048_instances_jupyter_token', 'instances', instancesJupyterTokenMigration],
  ['0049_port_tokens', 'ports', portTokensMigration],
  ['0050_agent_gpu_health', 'agent-server', agentGpuHealthMigration], // issue 33 (telemetry)
  ['0051_volume_asks', 'volumes', volumeAsksMigration], // issue 33 (volumes)
  ['0052_serverless_worker_reports', 'serverless', serverlessWorkerReportsMigration], // issue 33 (serverless)
  ['0053_emu_request_faults', 'emulator/emu-request-faults', emuRequestFaultsMigration], // issue 34 (request-faults)
  ['0054_emu_host_events', 'emulator/emu-events', emuHostEventsMigration], // issue 34 (events)
  ['0055_emu_transitions', 'emulator/emu-transitions', emuTransitionsMigration], // issue 34 (transitions)
];

export const MIGRATIONS: MigrationList = {
  migrations: OWNED_MIGRATIONS.map(([name, , migration]) => [name, migration] as const),
  renamed: RENAMED,
};

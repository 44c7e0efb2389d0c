/**
 * The names databases made before issue 30 recorded, each with the migrations it is now (src/migrations/). Issue 30
 * gave every migration one owner and a number in sequence: 0001_foundation made four features' tables, 0006_tfa and
 * 0015_hosting three and two, 0022_prepay_benchmarks four, and 0032_simhost also dropped the instances' boot timers;
 * the numbers had gaps, and the first twelve had been applied in another order than their numbers' (listed here in
 * that order, which the new numbers follow, so every database's applied migrations are the first of the new list).
 * platform/db/migrations.ts `rename` applies this before the migrator runs. Kept while a database of before issue
 * 30 may still be opened.
 */
export const RENAMED: ReadonlyArray<readonly [old: string, now: readonly string[]]> = [
  ['0001_foundation', ['0001_users', '0002_api_keys', '0003_jobs_and_kv', '0004_outbox']],
  ['0002_fleet', ['0005_machines']],
  ['0008_billing', ['0006_billing']],
  ['0003_templates', ['0007_templates']],
  ['0004_ssh_keys', ['0008_ssh_keys']],
  ['0005_instances', ['0009_instances']],
  ['0007_teams', ['0010_teams']],
  ['0006_tfa', ['0011_tfa', '0012_fault_counters', '0013_sessions']],
  ['0009_volumes', ['0014_volumes']],
  ['0010_serverless', ['0015_serverless']],
  ['0011_fleet_heartbeat', ['0016_machines_heartbeat']],
  ['0012_billing_rates', ['0017_billing_rates']],
  ['0013_fleet_host_user', ['0018_machines_host_user']],
  ['0014_agent', ['0019_agent_machines']],
  ['0015_hosting', ['0020_machines_listing', '0021_hosting_defjobs']],
  ['0016_env_vars', ['0022_env_vars']],
  ['0017_billing_payments', ['0023_billing_payments']],
  ['0018_audit', ['0024_audit']],
  ['0019_instances_idempotency_sealed', ['0025_instances_idempotency_sealed']],
  ['0020_instances_account_env', ['0026_instances_account_env']],
  ['0021_instances_extras', ['0027_instances_extras']],
  ['0022_prepay_benchmarks', ['0028_billing_deposits', '0029_benchmarks', '0030_clusters', '0031_volumes_unlisted']],
  ['0023_scheduled_jobs', ['0032_scheduled_jobs']],
  ['0024_subaccounts', ['0033_subaccounts']],
  ['0025_serverless_sdk', ['0034_serverless_sdk']],
  ['0026_serverless_endpoint_state', ['0035_serverless_endpoint_state']],
  ['0028_fleet_version_at_commit', ['0036_machines_version_at_commit']],
  ['0030_agent_desired_notify', ['0037_agent_desired_notify']],
  ['0031_hosting_defjob_runs', ['0038_hosting_defjob_runs']],
  ['0032_simhost', ['0039_simulated_hosts', '0040_instances_boot_timers_dropped']],
  ['0033_instances_live', ['0041_instances_live']],
  ['0034_keys_live', ['0042_api_keys_live']],
  ['0045_login_throttles', ['0043_login_throttles']],
  ['0048_agent_hardware_pending', ['0044_agent_hardware_pending']],
];

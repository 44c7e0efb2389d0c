/**
 * The routes whose success the audit log records, and the action name each gets. One list, here, so that the features
 * stay unaware of the audit log; test/audit.test.ts checks that every entry names a route that exists (a renamed
 * route fails it instead of silently leaving the log).
 */
export const AUDITED_ROUTES: Record<string, string> = {
  // Signing in
  'POST /api/v0/auth/login/': 'login',
  'POST /api/v0/tfa/': 'login.tfa',
  'POST /api/v0/auth/logout/': 'logout',
  // Second factors
  'POST /api/v0/tfa/confirm-new/': 'tfa.method_added',
  'DELETE /api/v0/tfa/': 'tfa.method_removed',
  'PUT /api/v0/tfa/update/': 'tfa.method_changed',
  'PUT /api/v0/tfa/regen-backup-codes/': 'tfa.backup_codes_regenerated',
  // API keys
  'POST /api/v0/auth/apikeys/': 'api_key.created',
  'DELETE /api/v0/auth/apikeys/:id/': 'api_key.revoked',
  'PUT /api/v0/commands/reset_apikey/': 'api_key.reset',
  'PUT /api/v0/users/current/reset-apikey/': 'api_key.reset',
  // Instances
  'PUT /api/v0/asks/:offer_id/': 'instance.created',
  'PUT /api/v0/launch_instance/': 'instance.launched',
  'DELETE /api/v0/instances/:id/': 'instance.destroyed',
  // Credit
  'PUT /api/v0/commands/transfer_credit/': 'credit.transferred',
  'PUT /api/v0/instances/prepay/:id/': 'credit.prepaid',
  'POST /_emu/credit': 'credit.added',
  // Teams and roles
  'POST /api/v0/team/roles/': 'team.role_created',
  'PUT /api/v0/team/roles/:id/': 'team.role_changed',
  'DELETE /api/v0/team/roles/:name/': 'team.role_removed',
  'PUT /api/v0/team/members/:id/': 'team.member_role_changed',
  'POST /api/v0/team/invite/': 'team.member_invited',
  'DELETE /api/v0/team/members/:id/': 'team.member_removed',
  // Subaccounts: the sign-up route made by a signed-in account (a plain sign-up has no user to record it for)
  'POST /api/v0/users/': 'subaccount.created',
  // Scheduled jobs (their replays are recorded as the routes they replay, with the key made for the run)
  'POST /api/v0/commands/schedule_job/': 'scheduled_job.created',
  'PUT /api/v0/commands/schedule_job/:id/': 'scheduled_job.changed',
  'DELETE /api/v0/commands/schedule_job/:id/': 'scheduled_job.deleted',
  // Account environment variables (the values are secrets; only the change is recorded)
  'POST /api/v0/secrets/': 'env_var.created',
  'PUT /api/v0/secrets/': 'env_var.changed',
  'DELETE /api/v0/secrets/': 'env_var.deleted',
};

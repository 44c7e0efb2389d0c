import type { Config } from './config.js';
import type { TypedApp } from './platform/http.js';
import type { Services } from './services.js';
import { usersRoutes } from './users/users-routes.js';
import { emulatorRoutes } from './emulator/emulator-routes.js';
import { metaRoutes } from './meta/meta-routes.js';
import { opsRoutes } from './ops/ops-routes.js';
import { tfaRoutes } from './tfa/tfa-routes.js';
import { loginRoutes, tfaLoginRoutes } from './login/login-routes.js';
import { billingEmuRoutes } from './billing/billing-emu-routes.js';
import { billingRoutes } from './billing/billing-routes.js';
import { keysRoutes } from './keys/keys-routes.js';
import { teamsRoutes } from './teams/teams-routes.js';
import { templatesRoutes } from './templates/templates-routes.js';
import { billingPaymentsRoutes } from './billing/billing-payments-routes.js';
import { auditRoutes } from './audit/audit-routes.js';
import { cloudRoutes } from './cloud/cloud-routes.js';
import { envVarsRoutes } from './env-vars/env-vars-routes.js';
import { sshKeysRoutes } from './ssh-keys/ssh-keys-routes.js';
import { offersRoutes } from './offers/offers-routes.js';
import { fleetEmuRoutes } from './fleet/fleet-emu-routes.js';
import { instancesRoutes } from './instances/instances-routes.js';
import { instanceExtrasRoutes } from './instances/instances-extras-routes.js';
import { volumesRoutes } from './volumes/volumes-routes.js';
import { serverlessRoutes } from './serverless/serverless-routes.js';
import { serverlessEmuRoutes } from './serverless/serverless-emu-routes.js';
import { serverlessSdkRoutes } from './serverless/serverless-sdk-routes.js';
import { serverlessAutoscalerRoutes } from './serverless/serverless-autoscaler-routes.js';
import { agentRoutes } from './hosts/agent-routes.js';
import { hostingRoutes } from './hosting/hosting-routes.js';
import { scheduledJobsRoutes } from './scheduled-jobs/scheduled-jobs-routes.js';
import { subaccountsRoutes } from './subaccounts/subaccounts-routes.js';

/** Every feature's routes. The emulator control API exists only in emulator mode (404 in production). */
export async function registerRoutes(app: TypedApp, services: Services, mode: Config['mode']): Promise<void> {
  await opsRoutes(app, services);
  await metaRoutes(app, services);
  await usersRoutes(app, services);
  await tfaLoginRoutes(app, services);
  await tfaRoutes(app, services);
  await loginRoutes(app, services);
  await billingRoutes(app, services);
  await keysRoutes(app, services);
  await teamsRoutes(app, services);
  await templatesRoutes(app, services);
  await sshKeysRoutes(app, services);
  await envVarsRoutes(app, services);
  await auditRoutes(app, services);
  await cloudRoutes(app);
  await billingPaymentsRoutes(app, services.billing);
  await offersRoutes(app, services);
  await instancesRoutes(app, services.instances);
  await instanceExtrasRoutes(app, services.instances);
  await volumesRoutes(app, services);
  await serverlessRoutes(app, services);
  await serverlessSdkRoutes(app, services);
  await serverlessAutoscalerRoutes(app, services);
  await agentRoutes(app, services.agent);
  await hostingRoutes(app, services);
  await scheduledJobsRoutes(app, services);
  await subaccountsRoutes(app, services);
  // The emulator control API, /_emu/ (contract §2): every such route is registered here, in emulator mode only.
  if (mode === 'emulator') {
    await emulatorRoutes(app, services);
    await billingEmuRoutes(app, services);
    await fleetEmuRoutes(app, services);
    await serverlessEmuRoutes(app, services);
  }
}

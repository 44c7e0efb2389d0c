import type { Config } from './config.js';
import type { TypedApp } from './platform/http.js';
import type { Services } from './services.js';
import { usersRoutes } from './users/users-routes.js';
import { emulatorRoutes } from './emulator/emulator-routes.js';
import { emuStateRoutes } from './emulator/emu-state/emu-state-routes.js';
import { emuStateFor } from './emulator/emu-state/emu-state-wiring.js';
import { emuEventsRoutes } from './emulator/emu-events/events-routes.js'; // [issue34:events]
import { transitionsRoutes } from './emulator/emu-transitions/transitions-routes.js'; // [issue34:transitions]
import { simMachinesRoutes } from './emulator/simulated-hosts/simhost-machines-routes.js';
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
import { instancesRoutes } from './instances/instances-routes.js';
import { instanceExtrasRoutes } from './instances/instances-extras-routes.js';
import { volumesRoutes } from './volumes/volumes-routes.js';
import { serverlessRoutes } from './serverless/serverless-routes.js';
import { serverlessEmuRoutes } from './serverless/serverless-emu-routes.js';
import { serverlessSdkRoutes } from './serverless/serverless-sdk-routes.js';
import { serverlessAutoscalerRoutes } from './serverless/serverless-autoscaler-routes.js';
import { agentRoutes } from './agent-server/agent-server-routes.js';
import { hostingRoutes } from './hosting/hosting-routes.js';
import { scheduledJobsRoutes } from './scheduled-jobs/scheduled-jobs-routes.js';
import { subaccountsRoutes } from './subaccounts/subaccounts-routes.js';
import { depositsRoutes } from './deposits/deposits-routes.js';
import { launchRoutes } from './launch/launch-routes.js';
import { instancesQueriesRoutes } from './instances/instances-queries-routes.js';
import { benchmarksEmuRoutes, benchmarksRoutes } from './benchmarks/benchmarks-routes.js';
import { clustersRoutes } from './clusters/clusters-routes.js';
import { networkRoutes } from './network/network-routes.js';
import { copyRoutes } from './copy/copy-routes.js';
import { portsRoutes } from './ports/ports-routes.js';
import { requestFaultsRoutes } from './emulator/emu-request-faults/request-faults-routes.js';
import { emuSeedRoutes } from './emulator/emu-seed/seed-routes.js'; // [issue34:seed]
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
  await copyRoutes(app, services);
  await portsRoutes(app, services);
  await volumesRoutes(app, services);
  await serverlessRoutes(app, services);
  await serverlessSdkRoutes(app, services);
  await serverlessAutoscalerRoutes(app, services);
  await agentRoutes(app, services.agent);
  await hostingRoutes(app, services);
  await scheduledJobsRoutes(app, services);
  await subaccountsRoutes(app, services);
  await depositsRoutes(app, services);
  await launchRoutes(app, services);
  await instancesQueriesRoutes(app, services.instances);
  await benchmarksRoutes(app, services);
  await clustersRoutes(app, services);
  await networkRoutes(app);
  // The emulator control API, /_emu/ (contract §2): every such route is registered here, in emulator mode only.
  if (mode === 'emulator') {
    await emulatorRoutes(app, services);
    await billingEmuRoutes(app, services);
    await simMachinesRoutes(app, { simhost: services.simhost! });
    await serverlessEmuRoutes(app, services);
    await benchmarksEmuRoutes(app, services);
    // [issue34:state] GET/PUT /_emu/state: the whole world saved and loaded.
    await emuStateRoutes(app, { emuState: emuStateFor(services.deps) });
    await emuSeedRoutes(app, { emuSeed: services.emuSeed! }); // [issue34:seed]
    await requestFaultsRoutes(app, services);
    await emuEventsRoutes(app, { emuEvents: services.emuEvents! }); // [issue34:events]
    await transitionsRoutes(app, { transitions: services.emuTransitions! }); // [issue34:transitions]
  }
}

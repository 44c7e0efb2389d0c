import type { AppDeps, TypedApp } from './app.js';
import type { Services } from './services.js';
import { usersRoutes } from './users/users-routes.js';
import { emulatorRoutes } from './emulator/emulator-routes.js';
import { metaRoutes } from './meta/meta-routes.js';
import { opsRoutes } from './ops/ops-routes.js';
import { tfaRoutes } from './tfa/tfa-routes.js';
import { loginRoutes } from './login/login-routes.js';
import { billingEmuRoutes } from './billing/billing-emu-routes.js';
import { billingRoutes } from './billing/billing-routes.js';
import { keysRoutes } from './keys/keys-routes.js';
import { teamsRoutes } from './teams/teams-routes.js';
import { templatesRoutes } from './templates/templates-routes.js';
import { sshKeysRoutes } from './ssh-keys/ssh-keys-routes.js';
import { offersRoutes } from './offers/offers-routes.js';
import { fleetEmuRoutes } from './fleet/fleet-emu-routes.js';
import { instancesRoutes } from './instances/instances-routes.js';
import { volumesRoutes } from './volumes/volumes-routes.js';
import { serverlessRoutes } from './serverless/serverless-routes.js';
import { serverlessEmuRoutes } from './serverless/serverless-emu-routes.js';
import { hostingRoutes } from './hosting/hosting-routes.js';

/** Every feature's routes. The emulator control API exists only in emulator mode (404 in production). */
export async function registerRoutes(app: TypedApp, services: Services, deps: AppDeps): Promise<void> {
  await opsRoutes(app, services);
  await metaRoutes(app, services);
  await usersRoutes(app, services);
  await tfaRoutes(app, services);
  await loginRoutes(app, services);
  await billingRoutes(app, services);
  await keysRoutes(app, services);
  await teamsRoutes(app, services);
  await templatesRoutes(app, services);
  await sshKeysRoutes(app, services);
  await offersRoutes(app, services);
  await instancesRoutes(app, services.instances);
  await volumesRoutes(app, services);
  await serverlessRoutes(app, services);
  await hostingRoutes(app, services);
  if (deps.config.mode === 'emulator') await emulatorRoutes(app, services);
  if (deps.config.mode === 'emulator') await billingEmuRoutes(app, services);
  if (deps.config.mode === 'emulator') await fleetEmuRoutes(app, services);
  if (deps.config.mode === 'emulator') await serverlessEmuRoutes(app, services);
}

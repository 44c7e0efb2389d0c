/**
 * Issue 34 (state): the service made once per app (one per `deps`, the app's own), so the wiring root and the routes
 * share it; and the start-up load of GPUPLANE_EMU_STATE as a lifecycle hook.
 */
import type { Config } from '../../config.js';
import type { Store } from '../../platform/db/connect.js';
import type { Clock } from '../../platform/clock.js';
import type { Random } from '../../platform/random.js';
import type { Scheduler } from '../../platform/scheduler.js';
import type { Logger } from 'pino';
import type { EmulatorLifecycle } from '../emulator-lifecycle.js';
import type { Sealer } from './emu-state-codec.js';
import { emuStateServiceFactory, type EmuStateService } from './emu-state-service.js';

export interface EmuStateAppDeps {
  config: Config;
  store: Store;
  clock: Clock;
  random: Random;
  scheduler: Scheduler;
  secretBox: Sealer;
  log: Logger;
}

const made = new WeakMap<object, EmuStateService>();

/** The app's state service (made on first use). */
export function emuStateFor(deps: EmuStateAppDeps): EmuStateService {
  let s = made.get(deps);
  if (!s) made.set(deps, (s = emuStateServiceFactory(deps)));
  return s;
}

/**
 * Emulator mode: with GPUPLANE_EMU_STATE set, the saved world in that file replaces whatever the database holds,
 * before the server listens, at every start (a file database started again goes back to the file's world).
 */
export function wireEmuState(deps: EmuStateAppDeps, lifecycle: EmulatorLifecycle): EmuStateService {
  const service = emuStateFor(deps);
  const file = deps.config.emuState;
  if (file) {
    lifecycle.add({
      name: 'state',
      async beforeListen() {
        await service.loadFile(file);
      },
    });
  }
  return service;
}

import type { AppDeps } from './app.js';
import { authenticatorFactory } from './platform/auth.js';
import type { Scheduler } from './platform/scheduler.js';
import { keysStore } from './keys/keys-store.js';
import { readCache } from './platform/db/read-cache.js';
import { apiKeysServiceFactory, keysServiceFactory } from './keys/keys-service.js';
import { teamsStore } from './teams/teams-store.js';
import { teamsServiceFactory } from './teams/teams-service.js';
import { usersStore } from './users/users-store.js';
import { usersServiceFactory } from './users/users-service.js';
import { outboxStore } from './emulator/outbox-store.js';
import { emulatorServiceFactory } from './emulator/emulator-service.js';
import { createTfaServices } from './tfa/tfa-wiring.js';
import { billingServiceFactory } from './billing/billing-service.js';
import { templatesStore } from './templates/templates-store.js';
import { templatesServiceFactory } from './templates/templates-service.js';
import { sshKeysStore } from './ssh-keys/ssh-keys-store.js';
import { sshKeysServiceFactory } from './ssh-keys/ssh-keys-service.js';
import { fleetServiceFactory } from './fleet/fleet-service.js';
import { offersServiceFactory } from './offers/offers-service.js';
import { instancesModule } from './instances/instances-module.js';
import { volumesServiceFactory } from './volumes/volumes-service.js';
import { fleetStore, toRecord } from './fleet/fleet-store.js';
import { serverlessServiceFactory } from './serverless/serverless-service.js';
import { offersInTx } from './serverless/serverless-offers.js';
import { OFFER_FIELDS } from './offers/offer-fields.js';
import type { Metrics } from './ops/ops-metrics.js';
import { opsServiceFactory } from './ops/ops-service.js';
import { opsStore } from './ops/ops-store.js';
import { VERSION } from './ops/ops-version.js';
import { hostingWiring } from './hosting/hosting-wiring.js';

export type ServiceDeps = AppDeps & { scheduler: Scheduler; metrics: Metrics };

/** The composition root: every store and service, wired over explicit dependencies. */
export function createServices(deps: ServiceDeps) {
  const { store, clock, random, scheduler, config, secretBox, metrics, log } = deps;
  const db = store.db;
  const keys = keysStore(db, store.dialect, readCache(store));
  const keysService = keysServiceFactory({ keys, clock, random });
  const teamsDb = teamsStore(db);
  const auth = authenticatorFactory({ keys, keysService, teamRole: teamsDb.memberPermissions });
  // users/current shows the exact balance (billing is built below; the closure runs only at request time).
  const users = usersServiceFactory({ db, users: usersStore(db), keysService, clock, random, balance: (user, rate) => billing.balanceOf(user, rate) });
  const outbox = outboxStore(db);
  const apiKeys = apiKeysServiceFactory({ keys, keysService, clock, memberPermissions: teamsDb.memberPermissions });
  const emulator = emulatorServiceFactory({ config, store, clock, scheduler, users, keysService, outbox });
  // 2FA, login and sessions, and the message providers (e-mail, SMS): { tfa, tfaAuth, login, sessions, messenger }.
  const tfaServices = createTfaServices({ db, config, clock, random, secretBox, scheduler, keys, keysService, resolve: auth.resolve, users, outbox, emulator });
  const teams = teamsServiceFactory({
    db, teams: teamsDb, users: usersStore(db), clock, random, publicUrl: config.publicUrl,
    revokeTeamKeys: keys.revokeByTeam,
    // The outbox in emulator mode, SMTP in production.
    sendEmail: (m) => tfaServices.messenger.sendEmail(m),
  });
  const fleet = fleetServiceFactory({ store, clock, random, config, scheduler });
  // After /_emu/reset the same seeded fleet comes back (contract §2).
  emulator.onReset((tx) => fleet.reseed(tx));
  const offers = offersServiceFactory({ index: fleet.index, clock });
  const billing = billingServiceFactory({ store, clock, scheduler });
  const templates = templatesServiceFactory({ db, dialect: store.dialect, templates: templatesStore(db), clock, random, secretBox });
  const sshKeys = sshKeysServiceFactory({ db, dialect: store.dialect, sshKeys: sshKeysStore(db), clock });
  // Volumes: each machine's free disk is a volume offer. FleetApi has no machine list yet, so the fleet's own store
  // is read here, in the composition root, rather than from the volumes feature (move it into FleetApi when it has one).
  const fleetMachines = fleetStore(db, store.dialect);
  const volumes = volumesServiceFactory({
    store, clock, billing,
    fleet: {
      machines: async () => (await fleetMachines.machinesAbove(-1)).map(toRecord),
      machine: async (id, tx) => {
        const row = await fleetMachines.machine(id, tx);
        return row && toRecord(row);
      },
    },
  });
  // Renting and the instance lifecycle. `volumes` is a hook the volumes feature fills in (instances-ports.ts).
  const instances = instancesModule({
    store, clock, random, scheduler, config, secretBox, keys, keysService, emulator, fleet, billing,
    templates: templates.instancesPort, sshKeys, volumes: volumes.port,
  });
  // A simulated host that stops heartbeating: its instances turn unknown, then offline (fleet-heartbeat.ts).
  fleet.onHostLost((tx, machineId) => instances.hostLost(tx, machineId));
  // A team with live instances is not deleted (409 conflict).
  teams.onDelete((teamId, tx) => instances.refuseTeamDelete(teamId, tx));

  // The host side: a host's machines, listings, maintenance windows, earnings (src/hosting/).
  const hostingServices = hostingWiring({ store, clock, scheduler, config, fleet, instances, billing });

  return {
    ...hostingServices,
    deps,
    keys,
    keysService,
    apiKeys,
    teams,
    auth,
    users,
    outbox,
    emulator,
    ...tfaServices,
    billing,
    templates,
    sshKeys,
    fleet,
    offers,
    instances,
    volumes,
    // The autoscaler rents and destroys real instances inside its job's transaction, choosing offers as search does.
    serverless: serverlessServiceFactory({
      store, clock, scheduler, billing, instances, templates: templates.instancesPort, offerFields: OFFER_FIELDS,
      offersIn: offersInTx({ machines: async (tx) => (await fleetMachines.machinesAbove(-1, tx)).map(toRecord), gpus: (ids, tx) => fleetMachines.gpusOf(ids, tx) }, clock),
    }),
    // Health, readiness, version and the Prometheus metrics.
    ops: opsServiceFactory({
      store, clock, scheduler, metrics, config, log, version: VERSION,
      ping: opsStore(db).ping,
      countInstances: instances.countByState,
      offersListed: async () => (await fleet.index.offers()).length,
    }),
    /** GPU model names on offer; the fleet fills it in. */
    fleetNames: (): Promise<string[]> => fleet.gpuNames(),
    /** Runs once the owner exists, before listening (e.g. seeding the simulated fleet). */
    // The fleet is created (and, in emulator mode, seeded) once per database; see fleet-service ensureSeeded.
    onStart: (async () => {
      await fleet.ensureSeeded();
    }) as undefined | (() => Promise<void>),
  };
}

export type Services = ReturnType<typeof createServices>;

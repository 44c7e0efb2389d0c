import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Clock } from './platform/clock.js';
import type { SecretBox } from './platform/crypto.js';
import type { Store } from './platform/db/connect.js';
import type { Random } from './platform/random.js';
import { authenticatorFactory } from './platform/auth.js';
import type { FaultHandler } from './platform/faults.js';
import type { Scheduler } from './platform/scheduler.js';
import { readCache } from './platform/db/read-cache.js';
import { keysStore } from './keys/keys-store.js';
import { apiKeysServiceFactory, keysServiceFactory } from './keys/keys-service.js';
import { teamsStore } from './teams/teams-store.js';
import { teamsServiceFactory } from './teams/teams-service.js';
import { usersStore } from './users/users-store.js';
import { usersServiceFactory } from './users/users-service.js';
import { outboxStore } from './emulator/outbox-store.js';
import { faultCounters } from './emulator/fault-counters-store.js';
import { outboxMessenger, SMS_FAULTS } from './emulator/outbox-messenger.js';
import { emulatorServiceFactory } from './emulator/emulator-service.js';
import { emuSeedFactory, type EmuSeedService } from './emulator/emu-seed/seed-service.js';
import { emulatorLifecycle } from './emulator/emulator-lifecycle.js';
import { wireEmuState } from './emulator/emu-state/emu-state-wiring.js';
import { emuEventsServiceFactory, type EmuEventsService } from './emulator/emu-events/events-service.js';
import { transitionsServiceFactory, type TransitionsService } from './emulator/emu-transitions/transitions-service.js';
import { productionMessenger } from './messages/messages-service.js';
import type { Messenger } from './messages/messages-types.js';
import { createTfa } from './tfa/tfa-wiring.js';
import { STORE_UNAVAILABLE_FAULT } from './tfa/tfa-window.js';
import { CHALLENGE_STORE_FAULT } from './tfa/tfa-send.js';
import { loginServiceFactory } from './login/login-service.js';
import { loginStore } from './login/login-store.js';
import { sessionsFactory } from './login/sessions.js';
import { billingServiceFactory } from './billing/billing-service.js';
import { templatesStore } from './templates/templates-store.js';
import { templatesServiceFactory } from './templates/templates-service.js';
import { auditStore } from './audit/audit-store.js';
import { auditServiceFactory } from './audit/audit-service.js';
import { envVarsStore } from './env-vars/env-vars-store.js';
import { envVarsServiceFactory } from './env-vars/env-vars-service.js';
import { sshKeysStore } from './ssh-keys/ssh-keys-store.js';
import { sshKeysServiceFactory } from './ssh-keys/ssh-keys-service.js';
import { machinesServiceFactory } from './machines/machines-service.js';
import { offersServiceFactory } from './offers/offers-service.js';
import { instancesModule } from './instances/instances-module.js';
import { volumesServiceFactory } from './volumes/volumes-service.js';
import { serverlessServiceFactory } from './serverless/serverless-service.js';
import { offersInTx } from './serverless/serverless-offers.js';
import { OFFER_FIELDS } from './offers/offer-fields.js';
import type { Metrics } from './ops/ops-metrics.js';
import { opsServiceFactory } from './ops/ops-service.js';
import { opsStore } from './ops/ops-store.js';
import { VERSION } from './ops/ops-version.js';
import { emuContainersFactory } from './emulator/emu-containers/emu-agents.js';
import { agentServiceFactory, type AgentService } from './agent-server/agent-server-service.js';
import { agentHostsPort } from './agent-server/agent-server-host-port.js';
import { simhostServiceFactory, type SimhostService } from './emulator/simulated-hosts/simhost-service.js';
import { scheduledJobsStore } from './scheduled-jobs/scheduled-jobs-store.js';
import { scheduledJobsServiceFactory } from './scheduled-jobs/scheduled-jobs-service.js';
import { subaccountsStore } from './subaccounts/subaccounts-store.js';
import { subaccountsServiceFactory } from './subaccounts/subaccounts-service.js';
import { usersContract } from './users/users-contract.js';
import { copyServiceFactory } from './copy/copy-service.js';
import { copyStore } from './copy/copy-store.js';
import { gatewayPorts } from './gateway/gateway-contract.js';
import { tunnelsServiceFactory } from './tunnels/tunnels-service.js';
import { gatewayServiceFactory } from './gateway/gateway-service.js';
import { terminalServiceFactory } from './terminal/terminal-service.js';
import { portsServiceFactory } from './ports/ports-service.js';
import { jupyterTokenOf } from './instances/instances-jupyter.js';
import { allows, type PermissionDoc } from './platform/permissions.js';

/** What the app is built from: main.ts and the tests make these. */
export interface AppDeps {
  config: Config;
  store: Store;
  clock: Clock;
  random: Random;
  log: Logger;
  secretBox: SecretBox;
}
import { hostingWiring } from './hosting/hosting-wiring.js';
import { depositsServiceFactory } from './deposits/deposits-service.js';
import { launchServiceFactory } from './launch/launch-service.js';
import { benchmarksServiceFactory } from './benchmarks/benchmarks-service.js';
import { clustersServiceFactory } from './clusters/clusters-service.js';

export type ServiceDeps = AppDeps & { scheduler: Scheduler; metrics: Metrics };

/**
 * The composition root: every store once, then every service after the ones it uses, then one block that wires the
 * features' hooks to each other and, in emulator mode, their faults and reset hooks to the emulator.
 */
export function createServices(deps: ServiceDeps) {
  const { store, clock, random, scheduler, config, secretBox, metrics, log } = deps;
  const db = store.db;
  const emulatorMode = config.mode === 'emulator';

  // Stores.
  const keys = keysStore(db, store.dialect, readCache(store));
  const teamsDb = teamsStore(db);
  const usersDb = usersStore(db);
  const outbox = outboxStore(db);
  const faults = faultCounters(db);

  // Services.
  const keysService = keysServiceFactory({ keys, clock, random });
  const auth = authenticatorFactory({
    keys: { findLiveByHash: (hash) => keys.findLiveByHash(hash), cachedLiveByHash: (hash) => keys.cachedLiveByHash(hash), touchIfStale: (key) => keysService.touchIfStale(key) },
    teamRole: teamsDb.memberPermissions,
  });
  const billing = billingServiceFactory({
    store, clock, scheduler,
    // A transfer's recipient: a decimal user id, or an account e-mail.
    findUser: async (r) => {
      const u = /^[0-9]{1,10}$/.test(r) ? await usersDb.findById(Number(r)) : await usersDb.findByEmail(r.toLowerCase());
      return u && { id: u.id, email: u.email };
    },
  });
  // users/current shows the exact balance.
  const users = usersServiceFactory({ db, users: usersDb, keysService, clock, random, balance: (user, rate) => billing.balanceOf(user, rate) });
  const apiKeys = apiKeysServiceFactory({ db, keys, keysService, clock, memberPermissions: teamsDb.memberPermissions });
  // The message providers: the outbox in emulator mode, SMTP and the HTTP SMS provider in production.
  const messenger: Messenger = emulatorMode
    ? outboxMessenger({ outbox, clock, faults })
    : productionMessenger({
        smtp: config.smtpUrl ? { url: config.smtpUrl, from: config.smtpFrom } : undefined,
        sms: config.smsUrl && config.smsAccount && config.smsToken ? { baseUrl: config.smsUrl, account: config.smsAccount, token: config.smsToken } : undefined,
      });
  const { tfa, tfaAuth, tfaLogin } = createTfa({
    db, dialect: store.dialect, clock, random, secretBox, messenger, resolve: auth.resolve, users: usersDb,
    storeUnavailable: emulatorMode ? () => faults.take(STORE_UNAVAILABLE_FAULT) : async () => false,
    challengeStoreFails: emulatorMode ? () => faults.take(CHALLENGE_STORE_FAULT) : async () => false,
  });
  const sessions = sessionsFactory({ db, keys, keysService, scheduler, clock, publicUrl: config.publicUrl, memberships: (u) => teamsDb.membershipsOf(u) });
  const login = loginServiceFactory({
    db, dialect: store.dialect, users: usersDb, usersService: users, store: loginStore(db), tfa: tfaLogin, sessions, messenger, clock, random,
    isSubaccount: async (userId) => (await subaccountsStore(db).find(userId)) !== undefined,
    publicUrl: config.publicUrl,
  });
  // Subaccounts: accounts made by another account, which sees and funds them; host-only ones may not rent.
  const subaccounts = subaccountsServiceFactory({
    db, subaccounts: subaccountsStore(db), clock,
    createUser: (input, tx) => users.createUser(input, tx),
    usersByIds: (ids) => usersContract.usersByIds(db, ids),
    sendVerification: (userId, email) => login.sendVerification(userId, email),
    balance: (user) => billing.balanceOf(user, undefined),
  });
  const teams = teamsServiceFactory({
    db, teams: teamsDb, users: usersDb, clock, random, publicUrl: config.publicUrl,
    revokeTeamKeys: keys.revokeByTeam,
    sendEmail: (m) => messenger.sendEmail(m),
  });
  const fleet = machinesServiceFactory({ store, clock, random, config });
  const offers = offersServiceFactory({
    index: fleet.index, clock, anonymousSearchesPerMinute: config.offerSearchRequiresKey ? null : config.anonymousSearchesPerMinute,
  });
  const templates = templatesServiceFactory({ db, dialect: store.dialect, templates: templatesStore(db), clock, random, secretBox });
  const audit = auditServiceFactory({
    audit: auditStore(db, store.dialect), clock, retentionDays: config.auditRetentionDays,
    teamOwner: async (teamId) => (await teamsDb.findTeam(teamId))?.owner_id,
    warn: (err, what) => log.warn({ err }, what),
  });
  const envVars = envVarsServiceFactory({ db, envVars: envVarsStore(db), clock, secretBox });
  const sshKeys = sshKeysServiceFactory({ db, dialect: store.dialect, sshKeys: sshKeysStore(db), clock });
  // Volumes: each machine's free disk is a volume offer.
  const volumes = volumesServiceFactory({
    store, clock, billing,
    mayRent: (userId, tx) => subaccounts.assertMayRent(userId, tx),
    fleet: {
      machines: () => fleet.machineRecords(), machine: (id, tx) => fleet.machineRecord(id, tx),
      hostUserOf: async (id, tx) => (await fleet.hosting.machine(id, tx))?.userId ?? undefined,
    },
  });
  // Renting and the instance lifecycle. `volumes` is a hook the volumes feature fills in (instances-ports.ts).
  const instances = instancesModule({
    store, clock, random, scheduler, config, secretBox, keys, keysService, fleet, billing,
    templates: templates.instancesPort, sshKeys, volumes: volumes.port, accountEnv: envVars,
    mayRent: (userId, tx) => subaccounts.assertMayRent(userId, tx),
    // Issue 33 (telemetry): instances show their GPUs as the host's agent last sampled them (src/agent-server/).
    // and in emulator mode the GPUs a `gpu_lost` host event took (emu-events; emuEvents is set below).
    gpuStates: async (machineIds) => {
      const states = await agent.gpuStates(machineIds);
      return emuEvents ? emuEvents.withLostGpus(states, machineIds) : states;
    },
  });
  // Prepaid instances: a deposit their charges draw from first, at a discount (src/deposits/).
  const deposits = depositsServiceFactory({
    db, clock, billing, instances: instances.queries,
    creditDiscountMax: async (machineId, tx) => (await fleet.machineRecord(machineId, tx))?.credit_discount_max,
  });
  // `launch instance`: the offer search and the rent in one call (src/launch/).
  const launch = launchServiceFactory({ offers, create: (p, offerId, body) => instances.create(p, offerId, body) });
  // Benchmark results gpuplane has recorded (`search benchmarks`).
  const benchmarks = benchmarksServiceFactory({ db, clock, machine: (id) => fleet.machineRecord(id) });
  // Clusters: a host's records of which of its machines share a LAN (src/clusters/).
  const clusters = clustersServiceFactory({
    db, dialect: store.dialect, clock,
    hostOf: async (machineId, tx) => {
      const m = await fleet.hosting.machine(machineId, tx);
      return m && !m.record.deleted ? m.userId : undefined;
    },
  });
  // Real hosts (`gpuplane agent`): registration, machine keys, desired state, status reports (src/agent-server/).
  const agent: AgentService = agentServiceFactory({
    store, clock, random, scheduler, config, secretBox, fleet, instances: instances.real, hub: instances.hub,
    // Account keys of renters and of team members with instance access, one read per desired state (issue 31 item 4).
    accountKeys: (userIds, tx) => sshKeys.publicKeysOfMany(userIds, tx),
    // Each machine's volumes go into its desired state (issue 33).
    volumes: (machineId, tx) => volumes.desiredOn(machineId, tx),
    warn: (err) => log.warn({ err }, 'reading the desired state of held agent polls failed'),
    // Issue 33 (telemetry): the host is told of a GPU fault and of its end in its audit log.
    onGpuHealthChange: (c) => void audit.record({
      userId: c.userId, teamId: null, apiKeyId: null, action: c.fault === null ? 'machine.gpu_recovered' : 'machine.gpu_fault',
      route: 'PUT /api/v0/agent/status/', ip: '', params: { machine_id: c.machineId, fault: c.fault, before: c.before }, fields: [],
    }).catch((err: unknown) => log.warn({ err, machine: c.machineId }, 'could not record a GPU health change in the audit log')),
  });
  // Issue 31 (tunnels): each real host's agent keeps one outbound tunnel to a server process, authenticated by its
  // machine key; through it any process opens streams to that machine's containers (src/tunnels/; app.ts hands it the
  // HTTP upgrades). `tunnels.api` is the TunnelsApi the gateway and copy use.
  const tunnels = tunnelsServiceFactory({
    db, clock, random, log, authenticate: agent.authenticate, hopUrl: config.hopUrl, listenHost: config.host,
  });
  // The emulator's simulated hosts: each simulated machine has an agent in the server, acting on a simulated runtime
  // (src/emulator/simulated-hosts/), so simulated and real machines share one lifecycle path. Emulator mode only.
  const simhost: SimhostService | undefined = emulatorMode
    ? simhostServiceFactory({ store, fleet, reports: agent.simulated, instances: instances.forHosts, clock, scheduler, config, notify: instances.real.notify })
    : undefined;
  // The autoscaler rents and destroys real instances inside its job's transaction, choosing offers as search does.
  const serverless = serverlessServiceFactory({
    store, clock, random, secretBox, scheduler, billing, instances, templates: templates.instancesPort, offerFields: OFFER_FIELDS,
    blobStoreUrl: config.blobStoreUrl, reportAddr: config.publicUrl, // issue 33: where workers report (REPORT_ADDR)
    offersIn: offersInTx({ machines: (tx) => fleet.machineRecords(tx), gpus: (ids, tx) => fleet.gpusOf(ids, tx) }, clock),
    teamOwner: async (tx, teamId) => (await teamsDb.findTeam(teamId, tx))?.owner_id,
  });
  // Scheduled jobs: API requests replayed as their user on a timetable (app.ts gives them the app to replay through).
  const scheduledJobs = scheduledJobsServiceFactory({
    store, jobs: scheduledJobsStore(db), clock, scheduler, keys, keysService,
    lockInstance: (scope, id, tx) => instances.lockInScope(scope, id, tx),
  });
  // Issue 31 (copy): `vastai copy` (src/copy/): where a renter's rsync reaches an instance (the gateway's host and the
  // instance's copy port), and copies between instances through the agents' tunnels (`copy.useTunnels`, wired once the
  // tunnels are built). Progress shows in the destination's status_msg.
  const copy = copyServiceFactory({
    store: copyStore(db), clock, log,
    instance: async (principal, id) => {
      // The instance object the renter sees (its scope and instance key checked by show): its schema names few fields.
      const o = (await instances.show(principal, id)).instances as Record<string, unknown> | null;
      return o ? { id, machine_id: o.machine_id as number | null, actual_status: o.actual_status as string | null, image_runtype: o.image_runtype as string | null } : undefined;
    },
    isAgentMachine: async (machineId) => (await fleet.machine(machineId))?.agent === true,
    // `V.<id>` copies go through an instance that mounts the volume (issue 33).
    volumeMounts: (principal, volumeId) => volumes.mountsOf(principal, volumeId),
    copyEndpoint: (inst) => {
      // The gateway's copy port for the instance (src/gateway/gateway-contract.ts): none for runtype args.
      const p = inst.image_runtype === null ? null : gatewayPorts(config, inst.id, inst.image_runtype);
      return p ? { host: p.ssh_host, port: p.copy_port } : undefined;
    },
    noteStatus: (id, msg) => instances.noteStatus(id, msg),
  });
  // Issue 31 (gateway): the SSH gateway (src/gateway/): a listener on each port of every live SSH or Jupyter instance,
  // passing a renter's connection to the instance through its host's tunnel. Built here, started by `gpuplane serve`
  // (main.ts; GPUPLANE_GATEWAY), closed with the app (app.ts).
  // An instance as the data plane's features (gateway, ports, terminal) see it: whose it is, where it runs, and whether
  // its machine is one of the emulator's simulated ones (no container to reach). One reading for the three.
  const reachableOf = async (r: NonNullable<Awaited<ReturnType<typeof instances.forHosts.find>>>) => {
    const machine = r.machine_id === null ? undefined : await fleet.machine(r.machine_id);
    return {
      id: r.id, runtype: r.runtype, userId: r.user_id, teamId: r.team_id, machineId: r.machine_id,
      actualStatus: r.actual_status, intendedStatus: r.intended_status, simulated: machine?.agent !== true,
    };
  };
  const reachableInstance = async (id: number) => {
    const r = await instances.forHosts.find(id, db);
    return r ? reachableOf(r) : undefined;
  };
  // Whether a team member's current role lets them act on the team's instances (a port URL, the terminal).
  const memberMayWrite = async (teamId: number, userId: number) => {
    const role = await teamsDb.memberPermissions(teamId, userId);
    return role !== undefined && allows(role.permissions ? (JSON.parse(role.permissions) as PermissionDoc) : null, 'instance_write');
  };
  const gateway = gatewayServiceFactory({
    config, db, secretBox, clock, log, audit,
    instances: {
      live: () => instances.real.store.liveRuntypes(),
      find: reachableInstance,
      changeMark: () => instances.real.store.lastEventId(),
      nextChange: (ms) => instances.hub.next(ms),
    },
  });
  gateway.useTunnels(tunnels.api);
  // Issue 32 (ports): each instance port's URL through the server (src/ports/): who may open it, its tokens and the
  // console's grants; app.ts hands it the requests to port hosts before the router, and carries them through the tunnels.
  const ports = portsServiceFactory({
    db, clock, random, config,
    instances: {
      find: async (id) => {
        const r = await instances.forHosts.find(id, db);
        if (!r) return undefined;
        return {
          ...(await reachableOf(r)),
          published: r.ports ? Object.keys(JSON.parse(r.ports) as Record<string, unknown>) : [],
          // Issue 32 (jupyter): Jupyter's own token opens its port 8080 (instances-jupyter.ts).
          jupyterToken: jupyterTokenOf(r, secretBox),
        };
      },
    },
    mayWrite: memberMayWrite,
  });
  ports.useTunnels(tunnels.api);
  // A destroyed instance's port tokens and grants go with it.
  instances.onDestroy((tx, instanceId) => ports.instanceDestroyed(tx, instanceId));
  // Issue 32 (terminal): the console's terminal, a WebSocket to a shell in the instance's container through its host's
  // tunnel (src/terminal/; app.ts hands it the upgrades).
  const terminal = terminalServiceFactory({
    config, log, clock, audit, resolve: auth.resolve,
    instances: {
      find: reachableInstance,
      changeMark: () => instances.real.store.lastEventId(),
      nextChange: (ms) => instances.hub.next(ms),
    },
    mayWrite: memberMayWrite,
  });
  terminal.useTunnels(tunnels.api);
  // Copies between instances go through the same tunnels (src/copy/).
  copy.useTunnels(tunnels.api);
  // Health, readiness, version and the Prometheus metrics.
  const ops = opsServiceFactory({
    store, clock, scheduler, metrics, config, log, version: VERSION,
    ping: opsStore(db).ping,
    countInstances: instances.countByState,
    offersListed: async () => (await fleet.index.offers()).length,
  });
  // Issue 34: what the emulator's parts do around start and stop (main.ts runs them; none in production).
  const emuLifecycle = emulatorLifecycle();
  // The emulator control API's service (its routes exist in emulator mode only).
  const emulator = emulatorServiceFactory({
    config, store, clock, scheduler, users, keysService, outbox,
    recordCredit: (tx, userId, amount, description) => billing.payments.recordCredit(tx, userId, amount, description),
  });

  // Hooks.
  // Out of credit: the user's running instances stop.
  billing.onCreditExhausted(instances.creditExhausted);
  // A destroyed instance takes its scheduled jobs with it.
  instances.onDestroy((tx, instanceId) => scheduledJobs.instanceDestroyed(tx, instanceId));
  // A team with live instances is not deleted (409 conflict).
  teams.onDelete((teamId, tx) => instances.refuseTeamDelete(teamId, tx));
  // A member leaves: the team's instances and volumes still on their bill become the team owner's (issue 29 item 17).
  teams.onMemberRemoved((tx, m) => instances.handOver(tx, m));
  teams.onMemberRemoved((tx, m) => volumes.handOver(tx, m));
  // The host of an instance's machine runs its commands and sends its log: a real host's agent (src/agent-server/);
  // in emulator mode the simulated hosts answer for theirs.
  const realHosts = agentHostsPort(agent.logs);
  instances.useHosts(simhost ? simhost.hostsPort(realHosts) : realHosts);
  let emuSeed: EmuSeedService | undefined;
  let emuEvents: EmuEventsService | undefined;
  let emuTransitions: TransitionsService | undefined;
  if (emulatorMode) {
    // A simulated machine's desired state changed: its agent acts on it.
    instances.onDesiredChange((tx, machineId, at) => simhost!.desiredChanged(tx, machineId, at));
    // A host that stops heartbeating (a silent fault): once past the timeout its instances turn unknown, then offline
    // (simhost-heartbeat.ts).
    fleet.onFaultChanged((tx, machineId, before, after) => simhost!.heartbeat.faultChanged(tx, machineId, before, after));
    // After /_emu/reset the same seeded fleet comes back (contract §2).
    emulator.onReset((tx) => fleet.reseed(tx));
    // Faults of contract §2: the message and 2FA store faults are counted (taken by the sends and the 2FA gate);
    // the instance and machine faults act at once, on the simulated hosts (src/emulator/simulated-hosts/).
    const counted = (name: string): FaultHandler => async (req) => ({ fault: name, remaining: await faults.add(name, req.count ?? 1) });
    for (const name of [SMS_FAULTS.sms_error, SMS_FAULTS.sms_rate_limited, STORE_UNAVAILABLE_FAULT, CHALLENGE_STORE_FAULT]) emulator.registerFault(name, counted(name));
    for (const [name, handler] of Object.entries(simhost!.faults)) emulator.registerFault(name, handler);
    // Save and load the whole world (GET/PUT /_emu/state); GPUPLANE_EMU_STATE loads one before listening.
    wireEmuState(deps, emuLifecycle);
    // Issue 34 items 2 and 6: the seed file before listening, the init scripts after; /readyz waits for
    // both (src/emulator/emu-seed/).
    emuSeed = emuSeedFactory({
      store, log, config, users, keysService, simhost: simhost!, fleet, templates, sshKeys, envVars, ops,
      findUserByEmail: (email) => usersDb.findByEmail(email),
      resolveKey: (secret) => auth.resolve(secret),
      recordCredit: (tx, userId, amount, description) => billing.payments.recordCredit(tx, userId, amount, description),
    });
    // Issue 34 item 3: host events on the service clock (src/emulator/emu-events/): an outbid wave as
    // a higher bid outbids, a host offline and back through the registered faults, a slow pull, a lost GPU.
    emuEvents = emuEventsServiceFactory({
      store, clock, scheduler, config, fleet, instances: instances.forHosts,
      outbid: (tx, ids, at) => instances.real.lifecycle.outbid(tx, ids, at),
      resumeWaiting: (tx, machineId, at) => instances.real.lifecycle.resumeWaiting(tx, machineId, at, (userId) => billing.assertCredit(userId, tx)),
      notify: instances.real.notify,
      fault: (req) => emulator.fault(req),
    });
    // Issue 34 item 4: rules that time the simulated hosts' work for instances (immediate,
    // delay, manual), and advancing one instance (src/emulator/emu-transitions/).
    emuTransitions = transitionsServiceFactory({ store, clock, scheduler, config, instances: instances.forHosts, fleet, sim: simhost!.runtime });
    // Issue 34 item 1: with GPUPLANE_EMU_CONTAINERS=docker a simulated machine that gets work runs it as real containers
    // under a real agent in this process (src/emulator/emu-containers/); its faults act there.
    if (config.emuContainers === 'docker') {
      const containers = emuContainersFactory({ config, db, clock, random, log, fleet, version: VERSION });
      instances.onDesiredChange((tx, machineId) => containers.desiredChanged(tx, machineId));
      simhost!.useAdopted(containers.hosts);
      emulator.onReset(() => containers.reset());
      emuLifecycle.add(containers.lifecycle);
    }
    // The seed's hooks come last: init scripts start once the machines' agents (real containers) are up.
    emuSeed.register(emuLifecycle);
  }

  // The host side: a host's machines, listings, maintenance windows, earnings (src/hosting/).
  const hostingServices = hostingWiring({
    store, clock, scheduler, config, fleet, instances, billing,
    volumesOn: (ids) => volumes.contractsOn(ids),
    // Deleting a machine revokes its agent's machine key (src/agent-server/).
    onMachineDeleted: (tx, machineId) => agent.revoke(machineId, tx),
    // Issue 33 (telemetry): `show machine` shows every GPU's latest sample and the machine's health events.
    gpuStates: (machineIds) => agent.gpuStates(machineIds, { events: true }),
    // `list machine`'s vol_size/vol_price: the machine's volume offer (-v 0 unlists it).
    volumeAsk: (tx, machineId, ask) => volumes.setAsk(tx, machineId, ask),
  });

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
    emuLifecycle,
    emuEvents,
    emuTransitions,
    emuSeed,
    tfa,
    tfaAuth,
    login,
    sessions,
    messenger,
    billing,
    templates,
    sshKeys,
    envVars,
    audit,
    fleet,
    offers,
    instances,
    deposits,
    launch,
    benchmarks,
    clusters,
    volumes,
    agent,
    tunnels,
    gateway,
    ports,
    simhost,
    serverless,
    scheduledJobs,
    subaccounts,
    ops,
    copy,
    terminal,
    /** GPU model names on offer; the fleet fills it in. */
    fleetNames: (): Promise<string[]> => fleet.gpuNames(),
    /** Runs once the owner exists, before listening (e.g. seeding the simulated fleet). */
    // The fleet is created (and, in emulator mode, seeded) once per database; see fleet-service ensureSeeded.
    onStart: (async () => {
      await fleet.ensureSeeded();
      // The offer index is loaded before the server listens: no search pays for it.
      await offers.warm();
    }) as undefined | (() => Promise<void>),
  };
}

export type Services = ReturnType<typeof createServices>;

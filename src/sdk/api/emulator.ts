/** The emulator control API (contract §2): admin keys only, emulator mode only. */
import type { Static } from 'typebox';
import type {
  EmuUserBody,
  EmuUserReply,
  FaultBody,
  FaultReply,
  NewMachineBody,
  NewMachineReply,
  NowReply,
  OutboxQuery,
  OutboxReply,
  ResetReply,
} from '../../emulator/emulator-schemas.js';
import type { EmuCreditReply } from '../../billing/billing-schemas.js';
import type { EmuLoadReply } from '../../serverless/serverless-schemas.js';
import type { EmuBenchmarkBody, EmuBenchmarkReply } from '../../benchmarks/benchmarks-schemas.js';
import type { Transport } from '../transport.js';
import type { StateDocument, StateLoaded } from '../../emulator/emu-state/emu-state-schemas.js';
import type { SeedFile, SeedReply } from '../../emulator/emu-seed/seed-schemas.js';
import type {
  RequestFaultBody,
  RequestFaultReply,
  RequestFaultsClearReply,
  RequestFaultsReply,
} from '../../emulator/emu-request-faults/request-faults-schemas.js';
import type { EventBody, EventReply, EventsClearedReply, EventsReply } from '../../emulator/emu-events/events-schemas.js';
import type {
  AdvanceInstanceReply,
  TransitionBody,
  TransitionReply,
  TransitionsClearReply,
  TransitionsReply,
} from '../../emulator/emu-transitions/transitions-schemas.js';

/** A seed document (`POST /_emu/seed`, GPUPLANE_EMU_SEED_FILE): machines, users with chosen keys, templates, SSH keys. */
export type EmuSeed = SeedFile;
/** Body of `POST /_emu/request-faults`. */
export type RequestFaultRequest = Static<typeof RequestFaultBody>;
/** A request fault rule, with how often it matched and fired. */
export type RequestFault = Static<typeof RequestFaultReply>['fault'];
/** Body of `POST /_emu/events`: a host event on the service clock. */
export type HostEventRequest = Static<typeof EventBody>;
/** A host event as listed: its machines, its state (pending, active, done), what it acted on. */
export type HostEvent = Static<typeof EventReply>['event'];
/** Body of `PUT /_emu/transitions`: a rule for the kind, or for one instance. */
export type TransitionRequest = Static<typeof TransitionBody>;
/** A transition rule as set and listed. */
export type Transition = Static<typeof TransitionReply>['transition'];
/** Body of `POST /_emu/users`. */
export type EmuUserRequest = Static<typeof EmuUserBody>;
export type EmuUser = Static<typeof EmuUserReply>;
export type FaultRequest = Static<typeof FaultBody>;
export type OutboxMessage = Static<typeof OutboxReply>['messages'][number];
/** Body of `POST /_emu/machines`: every field optional (catalogue defaults for the GPU). */
export type NewMachine = Static<typeof NewMachineBody>;

export function emulatorApi(t: Transport) {
  return {
    /** `GET /_emu/clock`: the service clock in Unix seconds. */
    clock: () => t.request<Static<typeof NowReply>>('GET', '/_emu/clock'),
    /** `POST /_emu/clock/advance`: moves a virtual clock and runs everything that fell due. */
    advance: (seconds: number) => t.request<Static<typeof NowReply>>('POST', '/_emu/clock/advance', { body: { seconds } }),
    /** `POST /_emu/users`: a user and a full-access API key for it. */
    createUser: (body: EmuUserRequest) => t.request<EmuUser>('POST', '/_emu/users', { body }),
    /** `GET /_emu/outbox`: every e-mail and SMS the service "sent", newest last. */
    outbox: (query: Static<typeof OutboxQuery> = {}) => t.request<Static<typeof OutboxReply>>('GET', '/_emu/outbox', { query }),
    /** `POST /_emu/faults`: puts an instance, a machine or a message provider in a fault condition. */
    fault: (body: FaultRequest) => t.request<Static<typeof FaultReply>>('POST', '/_emu/faults', { body }),
    /** `POST /_emu/benchmarks`: records a benchmark result of a machine. */
    addBenchmark: (body: Static<typeof EmuBenchmarkBody>) => t.request<Static<typeof EmuBenchmarkReply>>('POST', '/_emu/benchmarks', { body }),
    /**
     * `POST /_emu/credit`: adds dollars to a user's credit (negative removes); replies with the new balance. The user
     * by id, or by account e-mail (a string).
     */
    credit: (user: number | string, amount: number) =>
      t.request<Static<typeof EmuCreditReply>>('POST', '/_emu/credit', { body: typeof user === 'number' ? { user_id: user, amount } : { email: user, amount } }),
    /** `POST /_emu/machines`: a new simulated machine; its offers appear in search. */
    addMachine: (body: NewMachine = {}) => t.request<Static<typeof NewMachineReply>>('POST', '/_emu/machines', { body }),
    /** `POST /_emu/endpoints/{id}/load`: the load the simulated autoscaler follows from its next run. */
    setLoad: (endpointId: number, load: number) =>
      t.request<Static<typeof EmuLoadReply>>('POST', `/_emu/endpoints/${endpointId}/load`, { body: { load } }),
    /** `POST /_emu/reset`: back to a fresh, seeded state. */
    reset: () => t.request<Static<typeof ResetReply>>('POST', '/_emu/reset', { body: {} }),
    /** `GET /_emu/state`: the whole emulated world as one document (`gpuplane emu save FILE`). */
    saveState: () => t.request<Static<typeof StateDocument>>('GET', '/_emu/state'),
    /** `PUT /_emu/state`: replaces the whole world with a saved one (`gpuplane emu restore FILE`). */
    restoreState: (doc: Static<typeof StateDocument>) => t.request<Static<typeof StateLoaded>>('PUT', '/_emu/state', { body: doc }),
    /** `POST /_emu/seed`: applies a seed document (`gpuplane emu seed FILE`); users, keys and the rest kept when already there. */
    seed: (doc: EmuSeed) => t.request<SeedReply>('POST', '/_emu/seed', { body: doc }),
    /** `POST /_emu/request-faults`: faults API requests by route, method or category (429, 5xx, latency, timeout). */
    addRequestFault: (body: RequestFaultRequest) => t.request<Static<typeof RequestFaultReply>>('POST', '/_emu/request-faults', { body }),
    /** `GET /_emu/request-faults`: the rules, with how often each matched and fired. */
    requestFaults: () => t.request<Static<typeof RequestFaultsReply>>('GET', '/_emu/request-faults'),
    /** `DELETE /_emu/request-faults/{id}` (one rule) or `DELETE /_emu/request-faults` (all of them, without an id). */
    clearRequestFaults: (id?: number) =>
      t.request<Static<typeof RequestFaultsClearReply>>('DELETE', id === undefined ? '/_emu/request-faults' : `/_emu/request-faults/${id}`),
    /** `POST /_emu/events`: an outbid wave, a host offline, a slow pull or a lost GPU, now or at a time of the service clock. */
    addEvent: (body: HostEventRequest) => t.request<Static<typeof EventReply>>('POST', '/_emu/events', { body }),
    /** `GET /_emu/events`: every host event, oldest first. */
    events: () => t.request<Static<typeof EventsReply>>('GET', '/_emu/events'),
    /** `DELETE /_emu/events/{id}`: cancels a pending event or ends an active one (its hosts come back), and removes it. */
    clearEvent: (id: number) => t.request<Static<typeof EventReply>>('DELETE', `/_emu/events/${id}`),
    /** `DELETE /_emu/events`: every event cleared as `clearEvent` does. */
    clearEvents: () => t.request<Static<typeof EventsClearedReply>>('DELETE', '/_emu/events'),
    /** `PUT /_emu/transitions`: times the simulated hosts' work for instances (immediate, delay, manual, default), per kind or per instance. */
    setTransition: (body: TransitionRequest) => t.request<Static<typeof TransitionReply>>('PUT', '/_emu/transitions', { body }),
    /** `GET /_emu/transitions`: the rules, the slow-pull windows open now, and the seeded timing. */
    transitions: () => t.request<Static<typeof TransitionsReply>>('GET', '/_emu/transitions'),
    /** `DELETE /_emu/transitions`: every rule (or one instance's) goes: back to the seeded timing. */
    clearTransitions: (instanceId?: number) =>
      t.request<Static<typeof TransitionsClearReply>>('DELETE', '/_emu/transitions', instanceId === undefined ? {} : { query: { instance_id: instanceId } }),
    /** `POST /_emu/instances/{id}/advance`: the instance's next state now (provisioning, loading, running; a pending stop). */
    advanceInstance: (id: number) => t.request<Static<typeof AdvanceInstanceReply>>('POST', `/_emu/instances/${id}/advance`),
  };
}

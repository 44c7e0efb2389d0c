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
// [issue34:state] (its imports here)
// [issue34:seed] (its imports here)
// [issue34:request-faults] (its imports here)
// [issue34:events] (its imports here)
// [issue34:transitions] (its imports here)
// [issue34:recorder] (its imports here)


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
    // [issue34:state] (its methods here)
    // [issue34:seed] (its methods here)
    // [issue34:request-faults] (its methods here)
    // [issue34:events] (its methods here)
    // [issue34:transitions] (its methods here)
    // [issue34:recorder] (its methods here)
  };
}

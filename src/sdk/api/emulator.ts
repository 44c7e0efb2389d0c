/** The emulator control API (contract §2): admin keys only, emulator mode only. */
import type { Static } from 'typebox';
import type {
  EmuUserBody,
  EmuUserReply,
  FaultBody,
  FaultReply,
  NowReply,
  OutboxQuery,
  OutboxReply,
  ResetReply,
} from '../../emulator/emulator-schemas.js';
import type { Transport } from '../transport.js';

/** Body of `POST /_emu/users`. */
export type EmuUserRequest = Static<typeof EmuUserBody>;
export type EmuUser = Static<typeof EmuUserReply>;
export type FaultRequest = Static<typeof FaultBody>;
export type OutboxMessage = Static<typeof OutboxReply>['messages'][number];

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
    /** `POST /_emu/reset`: back to a fresh, seeded state. */
    reset: () => t.request<Static<typeof ResetReply>>('POST', '/_emu/reset', { body: {} }),
  };
}

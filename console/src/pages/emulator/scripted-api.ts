/**
 * The control API's scripted failures and transitions (issue 34; contract §2), for the Emulator page: the SDK's methods
 * (src/sdk/api/emulator.ts), typed as lib/emu-scripted.ts reads them; the SDK's transport for what it does not wrap.
 */
import { api } from '../../lib/api.js';
import type {
  HostEvent, HostEventBody, RequestFaultBody, RequestFaultRule, SlowPullWindow, TransitionBody, TransitionRule,
} from '../../lib/emu-scripted.js';

/** `GET /_emu/transitions`: the rules, the slow-pull windows host events opened, and the seeded timing. */
export interface TransitionsList {
  transitions: TransitionRule[];
  slow_pulls?: SlowPullWindow[];
  default_boot_seconds?: { min: number; max: number };
}

const t = api.transport;

export const scripted = {
  // The SDK's own (src/sdk/api/emulator.ts).
  requestFaults: (): Promise<{ faults: RequestFaultRule[] }> => api.emulator.requestFaults(),
  addRequestFault: (body: RequestFaultBody): Promise<{ fault: RequestFaultRule }> => api.emulator.addRequestFault(body),
  clearRequestFault: (id: number) => api.emulator.clearRequestFaults(id),
  clearRequestFaults: () => api.emulator.clearRequestFaults(),

  events: (): Promise<{ events: HostEvent[] }> => api.emulator.events(),
  addEvent: (body: HostEventBody): Promise<{ event: HostEvent }> => api.emulator.addEvent(body),
  cancelEvent: (id: number) => api.emulator.clearEvent(id),
  cancelEvents: () => api.emulator.clearEvents(),

  transitions: () => t.request<TransitionsList>('GET', '/_emu/transitions'),
  setTransition: (body: TransitionBody) => t.request<{ transition: TransitionRule }>('PUT', '/_emu/transitions', { body }),
  /** Every rule, or (with an id) that instance's rule only. */
  clearTransitions: (instanceId?: number) =>
    t.request<unknown>('DELETE', '/_emu/transitions', { query: instanceId === undefined ? {} : { instance_id: instanceId } }),
  advanceInstance: (id: number) =>
    t.request<{ instance_id: number; actual_status: string | null }>('POST', `/_emu/instances/${id}/advance`, { body: {} }),
};

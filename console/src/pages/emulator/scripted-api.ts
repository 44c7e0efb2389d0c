/**
 * The control API's scripted failures and transitions (issue 34; contract §2), for the Emulator page: the SDK's methods
 * (src/sdk/api/emulator.ts), typed as lib/emu-scripted.ts reads them.
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

export const scripted = {
  requestFaults: (): Promise<{ faults: RequestFaultRule[] }> => api.emulator.requestFaults(),
  addRequestFault: (body: RequestFaultBody): Promise<{ fault: RequestFaultRule }> => api.emulator.addRequestFault(body),
  clearRequestFault: (id: number) => api.emulator.clearRequestFaults(id),
  clearRequestFaults: () => api.emulator.clearRequestFaults(),

  events: (): Promise<{ events: HostEvent[] }> => api.emulator.events(),
  addEvent: (body: HostEventBody): Promise<{ event: HostEvent }> => api.emulator.addEvent(body),
  cancelEvent: (id: number) => api.emulator.clearEvent(id),
  cancelEvents: () => api.emulator.clearEvents(),

  transitions: (): Promise<TransitionsList> => api.emulator.transitions(),
  setTransition: (body: TransitionBody): Promise<{ transition: TransitionRule }> => api.emulator.setTransition(body),
  /** Every rule, or (with an id) that instance's rule only. */
  clearTransitions: (instanceId?: number) => api.emulator.clearTransitions(instanceId),
  advanceInstance: (id: number) => api.emulator.advanceInstance(id),
};

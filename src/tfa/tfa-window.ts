import { durationText, type Clock } from '../platform/clock.js';
import { TFA_AUTH_WINDOW_S } from './tfa-constants.js';
import { ApiError } from '../platform/errors.js';
import type { TfaStore } from './tfa-store.js';

/** Emulator fault of contract §2: the next authorization gate checks fail with `service_unavailable`. */
export const STORE_UNAVAILABLE_FAULT = 'store_unavailable';

export interface WindowDeps {
  store: TfaStore;
  clock: Clock;
  /** True when the gate's store is to fail now: the STORE_UNAVAILABLE_FAULT port, wired in emulator mode only. */
  storeUnavailable(): Promise<boolean>;
}

/** The add-method window check (an authorization gate), used by the 2FA service and the code sender. */
export function newMethodWindow({ store, clock, storeUnavailable }: WindowDeps) {
  return async function requireWindow(userId: number): Promise<void> {
    if (await storeUnavailable()) {
      throw new ApiError('service_unavailable', 'the authorization store is unavailable; retry', {}, undefined, { 'Retry-After': '1' });
    }
    const account = await store.account(userId);
    if (!account?.new_method_until || account.new_method_until <= clock.now()) {
      throw new ApiError('authorization_required', `authorize first (POST then PUT /api/v0/tfa/authorize-new-method/); the window lasts ${durationText(TFA_AUTH_WINDOW_S)}`);
    }
  };
}

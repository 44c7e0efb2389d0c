import type { Tx } from '../platform/db/connect.js';
import { loginThrottleStore } from './login-throttle-store.js';

/**
 * What login reads and writes of its own: the password throttle (login_throttles). The e-mailed codes live in 2FA's
 * tables and are 2FA's store's to write (email-codes.ts); the user's columns go through the users contract.
 */
export function loginStore(db: Tx) {
  return {
    throttle: loginThrottleStore(db),
  };
}

export type LoginStore = ReturnType<typeof loginStore>;

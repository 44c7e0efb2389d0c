import type { Tx } from '../platform/db/connect.js';
import type { TfaStore } from '../tfa/tfa-store.js';
import { usersContract } from '../users/users-contract.js';
import { loginThrottleStore } from './login-throttle-store.js';

/**
 * What login reads and writes: the user's verified e-mail (through the users contract), the e-mail challenges, which
 * live in 2FA's tables and so are 2FA's store's to write, and the password throttle (login's own table).
 */
export function loginStore(db: Tx, tfa: Pick<TfaStore, 'latestEmailVerify'>) {
  return {
    async setEmailVerified(userId: number, now: number, tx: Tx = db): Promise<void> {
      await usersContract.setEmailVerified(tx, userId, now);
    },
    latestEmailVerify: tfa.latestEmailVerify,
    throttle: loginThrottleStore(db),
  };
}

export type LoginStore = ReturnType<typeof loginStore>;

import type { Tx } from '../platform/db/connect.js';
import type { TfaStore } from '../tfa/tfa-store.js';
import { usersContract } from '../users/users-contract.js';

/**
 * What login reads and writes: the user's verified e-mail (through the users contract) and the login throttle and
 * e-mail challenges, which live in 2FA's tables and so are 2FA's store's to write.
 */
export function loginStore(db: Tx, tfa: Pick<TfaStore, 'latestEmailVerify' | 'loginState' | 'loginFailed' | 'loginSucceeded'>) {
  return {
    async setEmailVerified(userId: number, now: number, tx: Tx = db): Promise<void> {
      await usersContract.setEmailVerified(tx, userId, now);
    },
    latestEmailVerify: tfa.latestEmailVerify,
    loginState: tfa.loginState,
    loginFailed: tfa.loginFailed,
    loginSucceeded: tfa.loginSucceeded,
  };
}

export type LoginStore = ReturnType<typeof loginStore>;

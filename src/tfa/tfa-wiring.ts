import type { Clock } from '../platform/clock.js';
import type { SecretBox } from '../platform/crypto.js';
import type { Db, DialectName } from '../platform/db/connect.js';
import type { Principal } from '../platform/auth.js';
import type { Random } from '../platform/random.js';
import type { Messenger } from '../messages/messages-types.js';
import type { UsersLookup } from '../users/users-contract.js';
import { tfaAuthenticator } from './tfa-auth.js';
import { tfaForLogin } from './tfa-contract.js';
import { tfaSender } from './tfa-send.js';
import { tfaServiceFactory } from './tfa-service.js';
import { tfaStore } from './tfa-store.js';
import { tfaVerifier } from './tfa-verify.js';
import { newMethodWindow } from './tfa-window.js';

export interface TfaWiringDeps {
  db: Db;
  dialect: DialectName;
  clock: Clock;
  random: Random;
  secretBox: SecretBox;
  messenger: Messenger;
  resolve(secret: string): Promise<Principal | null>;
  users: Pick<UsersLookup, 'findById'>;
  /** The STORE_UNAVAILABLE_FAULT port (tfa-window.ts): the root wires it to the emulator's counters in emulator mode. */
  storeUnavailable(): Promise<boolean>;
  /** The CHALLENGE_STORE_FAULT port (tfa-send.ts), likewise. */
  challengeStoreFails?(): Promise<boolean>;
}

/**
 * Builds the 2FA feature: its service and route authenticator, and what login, which depends on 2FA, uses of it
 * (tfa-contract.ts: the login challenge, second factors, e-mailed codes).
 */
export function createTfa(d: TfaWiringDeps) {
  const { db, clock, random, secretBox, messenger } = d;
  const store = tfaStore(db, d.dialect);
  const verifier = tfaVerifier({ store, clock, secretBox });
  const requireWindow = newMethodWindow({ store, clock, storeUnavailable: d.storeUnavailable });
  const sender = tfaSender({ db, store, verifier, messenger, clock, random, requireWindow, challengeStoreFails: d.challengeStoreFails });
  const tfa = tfaServiceFactory({ db, store, verifier, sender, clock, random, secretBox, requireWindow });
  const tfaAuth = tfaAuthenticator({ resolve: d.resolve, store, users: d.users, clock });
  return { tfa, tfaAuth, tfaLogin: tfaForLogin({ store, verifier, random }) };
}

import type { Config } from '../config.js';
import type { Clock } from '../platform/clock.js';
import type { SecretBox } from '../platform/crypto.js';
import type { Db } from '../platform/db/connect.js';
import type { Principal } from '../platform/auth.js';
import type { Random } from '../platform/random.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { KeysService } from '../keys/keys-service.js';
import type { KeysStore } from '../keys/keys-store.js';
import type { OutboxStore } from '../emulator/outbox-store.js';
import type { EmulatorService } from '../emulator/emulator-service.js';
import type { UsersService } from '../users/users-service.js';
import { usersStore } from '../users/users-store.js';
import { faultCounters } from '../messages/fault-counters.js';
import { outboxMessenger, productionMessenger, SMS_FAULTS, type Messenger } from '../messages/messages-service.js';
import { loginServiceFactory } from '../login/login-service.js';
import { loginStore } from '../login/login-store.js';
import { sessionsFactory } from '../login/sessions.js';
import { tfaAuthenticator } from './tfa-auth.js';
import { CHALLENGE_STORE_FAULT, tfaSender } from './tfa-send.js';
import { STORE_UNAVAILABLE_FAULT, tfaServiceFactory, type TfaService } from './tfa-service.js';
import { tfaStore } from './tfa-store.js';
import { tfaVerifier } from './tfa-verify.js';

export interface TfaWiringDeps {
  db: Db;
  config: Config;
  clock: Clock;
  random: Random;
  secretBox: SecretBox;
  scheduler: Scheduler;
  keys: KeysStore;
  keysService: KeysService;
  resolve(secret: string): Promise<Principal | null>;
  users: UsersService;
  outbox: OutboxStore;
  emulator: EmulatorService;
}

/** The message providers for the configured mode (emulator: the outbox; production: SMTP and the HTTP SMS provider). */
export function createMessenger(config: Config, deps: { outbox: OutboxStore; clock: Clock; db: Db }): Messenger {
  if (config.mode === 'emulator') return outboxMessenger({ outbox: deps.outbox, clock: deps.clock, faults: faultCounters(deps.db) });
  return productionMessenger({
    smtp: config.smtpUrl ? { url: config.smtpUrl, from: config.smtpFrom } : undefined,
    sms: config.smsUrl && config.smsAccount && config.smsToken ? { baseUrl: config.smsUrl, account: config.smsAccount, token: config.smsToken } : undefined,
  });
}

/** Wires the 2FA subsystem, login and sessions, and the message providers; registers the emulator faults. */
export function createTfaServices(d: TfaWiringDeps) {
  const { db, config, clock, random, secretBox } = d;
  const store = tfaStore(db);
  const faults = faultCounters(db);
  const messenger = createMessenger(config, { outbox: d.outbox, clock, db });
  const verifier = tfaVerifier({ store, clock, secretBox });
  let tfa: TfaService | undefined;
  const emulated = config.mode === 'emulator' ? faults : undefined;
  const sender = tfaSender({ db, store, verifier, messenger, clock, random, requireWindow: (id) => tfa!.requireWindow(id), faults: emulated });
  tfa = tfaServiceFactory({ db, store, verifier, sender, faults, clock, random, secretBox, config });
  const users = usersStore(db);
  const tfaAuth = tfaAuthenticator({ resolve: d.resolve, store, users, clock });
  const sessions = sessionsFactory({ db, keys: d.keys, keysService: d.keysService, scheduler: d.scheduler, clock, publicUrl: config.publicUrl });
  const login = loginServiceFactory({ users, usersService: d.users, store: loginStore(db), tfaStore: store, verifier, sessions, messenger, clock, random });

  for (const name of [SMS_FAULTS.sms_error, SMS_FAULTS.sms_rate_limited, STORE_UNAVAILABLE_FAULT, CHALLENGE_STORE_FAULT]) {
    d.emulator.registerFault(name, async (req) => ({ fault: name, remaining: await faults.add(name, req.count ?? 1) }));
  }
  return { tfa, tfaAuth, login, sessions, messenger };
}

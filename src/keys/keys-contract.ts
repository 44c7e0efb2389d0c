/**
 * What other features do with API keys (`api_keys` rows): a login session is a key of kind `session`, an instance has
 * a key of its own, a team member's team keys go when they leave, a scheduled job replays with a key made for it. The
 * root hands them the keys store as this; the SQL stays in keys-store.ts. Keys are made by the keys service
 * (`KeysService.create`), which holds their secrets.
 */
import type { KeysStore } from './keys-store.js';

export type { KeyRow } from './keys-store.js';

export type KeysContract = Pick<
  KeysStore,
  'findById' | 'liveSessionKeysOf' | 'revoke' | 'setSessionTeam' | 'revokeInstanceKeys' | 'moveInstanceKeys' | 'revokeByTeam'
>;

/** The emulator's reset keeps the live bootstrap keys (read before the tables are emptied, written back after). */
export { bootstrapKeys } from './keys-store.js';

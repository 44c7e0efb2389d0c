import type { Generated } from 'kysely';

export interface ApiKeysTable {
  id: Generated<number>;
  user_id: number;
  /** Set for a key that acts for a team (team context). */
  team_id: number | null;
  name: string | null;
  /** SHA-256 of the secret, hex. The secret itself is never stored. */
  key_hash: string;
  /**
   * `user`, `session` (login / 2FA), `instance` (the restricted `instance_api_key`), or `job` (one replay of a
   * scheduled job, revoked after it).
   */
  kind: string;
  /** JSON permission document `{"api": {...}}`; null means full access. */
  permissions: string | null;
  instance_id: number | null;
  /** Kept across `/_emu/reset`. */
  is_bootstrap: number;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export interface KeysTables {
  api_keys: ApiKeysTable;
}

import type { Generated } from 'kysely';

/**
 * Account environment variables (`/api/v0/secrets/`): injected into every new instance of their owner. The value is
 * sealed with the secret key (platform/crypto.ts `SecretBox`); only the name is in clear.
 */
export interface EnvVarsTable {
  id: Generated<number>;
  /** Whose variables: `user:<id>` (personal context) or `team:<id>` (team context; shared by the team). */
  owner: string;
  /** The user who last wrote it. */
  user_id: number;
  name: string;
  value_sealed: string;
  created_at: number;
  updated_at: number;
}

export interface EnvVarsTables {
  env_vars: EnvVarsTable;
}

import type { Generated } from 'kysely';

/** SSH public keys registered on an account (contract §3). */
export interface SshKeysTable {
  id: Generated<number>;
  user_id: number;
  /** The OpenSSH public key line, normalised to `type base64 [comment]`. */
  public_key: string;
  created_at: number;
  updated_at: number;
}

export interface SshKeysTables {
  ssh_keys: SshKeysTable;
}

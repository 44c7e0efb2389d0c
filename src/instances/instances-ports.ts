/**
 * What the instances feature needs from other features, as narrow interfaces. The composition root (services.ts)
 * passes the real services; each port names the one or two calls used. The ports another feature implements itself
 * (templates, volumes) are public, in instances-contract.ts.
 */
import type { Tx } from '../platform/db/connect.js';
import type { Scope } from '../platform/auth.js';

/** The account environment variables (`/api/v0/secrets/`) a new instance of this scope starts with. */
export interface AccountEnvPort {
  environmentOf(scope: Scope, tx?: Tx): Promise<Record<string, string>>;
}

export interface SshKeysPort {
  /** Public keys registered on the account (a VM needs at least one at creation). */
  publicKeysOf(userId: number, tx?: Tx): Promise<string[]>;
}

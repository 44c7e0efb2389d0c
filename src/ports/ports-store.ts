/**
 * The ports feature's SQL (its tables only: ports-tables.ts). Each function takes an optional transaction.
 */
import type { Tx } from '../platform/db/connect.js';

export function portsStore(db: Tx) {
  return {
    /** The instance port's token digest, or undefined when none was made. */
    async tokenHash(instanceId: number, port: number, tx: Tx = db): Promise<string | undefined> {
      const r = await tx.selectFrom('port_tokens').select('token_hash').where('instance_id', '=', instanceId).where('port', '=', port).executeTakeFirst();
      return r?.token_hash;
    },

    /** Makes or replaces the port's token (one statement: the old one is gone when this commits). */
    async putToken(row: { instance_id: number; port: number; token_hash: string; user_id: number; created_at: number }, tx: Tx = db): Promise<void> {
      await tx
        .insertInto('port_tokens')
        .values(row)
        .onConflict((oc) => oc.columns(['instance_id', 'port']).doUpdateSet({ token_hash: row.token_hash, user_id: row.user_id, created_at: row.created_at }))
        .execute();
    },

    async putGrant(row: { grant_hash: string; instance_id: number; port: number; user_id: number; expires_at: number }, now: number, tx: Tx = db): Promise<void> {
      // Expired grants go as new ones are made: the table holds at most a minute's worth.
      await tx.deleteFrom('port_grants').where('expires_at', '<', now).execute();
      await tx.insertInto('port_grants').values(row).execute();
    },

    /**
     * Takes the grant (deletes it, whatever it is for: a grant shown on the wrong host is spent too) and answers its
     * row: one statement, so two requests racing with one grant cannot both have it.
     */
    async takeGrant(grantHash: string, tx: Tx = db): Promise<{ instance_id: number; port: number; user_id: number; expires_at: number } | undefined> {
      return tx.deleteFrom('port_grants').where('grant_hash', '=', grantHash).returning(['instance_id', 'port', 'user_id', 'expires_at']).executeTakeFirst();
    },

    /** A destroyed instance's tokens and grants. */
    async removeOfInstance(instanceId: number, tx: Tx = db): Promise<void> {
      await tx.deleteFrom('port_tokens').where('instance_id', '=', instanceId).execute();
      await tx.deleteFrom('port_grants').where('instance_id', '=', instanceId).execute();
    },
  };
}

export type PortsStore = ReturnType<typeof portsStore>;

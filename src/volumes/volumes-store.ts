import { expressionBuilder, sql, type Expression, type Insertable, type RawBuilder, type Selectable, type SqlBool } from 'kysely';
import type { Database } from '../platform/db/schema.js';
import type { Scope } from '../platform/auth.js';
import type { DialectName, Tx } from '../platform/db/connect.js';
import { prepared } from '../platform/db/prepared.js';
import type { VolumeAsksTable, VolumeMountsTable, VolumesTable } from './volumes-tables.js';

export type VolumeRow = Selectable<VolumesTable>;
export type MountRow = Selectable<VolumeMountsTable>;
export type VolumeAskRow = Selectable<VolumeAsksTable>;

/** Namespace of the PostgreSQL advisory locks that serialize volume creation per machine (its free space). */
const MACHINE_SPACE_LOCK = 0x766f6c; // "vol"

/** Rows of the caller's scope: its team's in a team context, else its own personal ones (auth.ts Scope). */
function inScope<Q extends { where: (...a: any[]) => Q }>(q: Q, scope: Scope): Q {
  q = q.where('team_id', scope.teamId === null ? 'is' : '=', scope.teamId);
  return scope.teamId === null ? q.where('user_id', '=', scope.userId) : q;
}

export function volumesStore(db: Tx, dialect: DialectName) {
  const pg = dialect === 'postgres';
  // Run by every destroy (platform/db/prepared.ts).
  const unmountOf = prepared(['instanceId'], (q: { instanceId: number }) => db.deleteFrom('volume_mounts').where('instance_id', '=', q.instanceId));
  return {
    async insert(row: Insertable<VolumesTable>, tx: Tx = db): Promise<number> {
      const r = await tx.insertInto('volumes').values(row).returning('id').executeTakeFirstOrThrow();
      return r.id;
    },

    /** A live volume of the scope; locked (PostgreSQL) when `lock`. */
    /** A team's live volumes paid by `fromUserId` become `toUserId`'s (a member leaves the team): their ids. */
    async moveTeamPayer(teamId: number, fromUserId: number, toUserId: number, tx: Tx = db): Promise<number[]> {
      const ids = (await tx.selectFrom('volumes').select('id').where('team_id', '=', teamId).where('user_id', '=', fromUserId)
        .where('deleted_at', 'is', null).orderBy('id').execute()).map((r) => r.id);
      if (ids.length) await tx.updateTable('volumes').set({ user_id: toUserId }).where('id', 'in', ids).execute();
      return ids;
    },

    async findInScope(id: number, scope: Scope, tx: Tx = db, lock = false): Promise<VolumeRow | undefined> {
      let q = inScope(tx.selectFrom('volumes').selectAll().where('id', '=', id).where('deleted_at', 'is', null), scope);
      if (pg && lock) q = q.forUpdate();
      return q.executeTakeFirst();
    },

    async listInScope(scope: Scope, tx: Tx = db): Promise<VolumeRow[]> {
      return inScope(tx.selectFrom('volumes').selectAll().where('deleted_at', 'is', null).orderBy('id'), scope).execute();
    },

    /**
     * Until the caller's transaction ends, no other transaction creates a volume on the machine (PostgreSQL; SQLite
     * serializes writers anyway), so two creations cannot both take the last free space.
     */
    async lockMachineSpace(machineId: number, tx: Tx): Promise<void> {
      if (pg) await sql`SELECT pg_advisory_xact_lock(${MACHINE_SPACE_LOCK}, ${machineId})`.execute(tx);
    },

    /** GB held by live volumes, per machine (all machines when `machineId` is not given). */
    async usedGb(machineId?: number, tx: Tx = db): Promise<Map<number, number>> {
      let q = tx
        .selectFrom('volumes')
        .select(['machine_id', (eb) => eb.fn.sum<number>('size_gb').as('gb')])
        .where('deleted_at', 'is', null)
        .groupBy('machine_id');
      if (machineId !== undefined) q = q.where('machine_id', '=', machineId);
      const rows = await q.execute();
      return new Map(rows.map((r) => [r.machine_id, Number(r.gb)]));
    },

    /** Every volume ever made on these machines (deleted ones too: their charges count in earnings). */
    async onMachines(machineIds: readonly number[], tx: Tx = db): Promise<{ id: number; machine_id: number }[]> {
      if (!machineIds.length) return [];
      return tx.selectFrom('volumes').select(['id', 'machine_id']).where('machine_id', 'in', [...machineIds]).execute();
    },

    /** Machines whose volume offer is unlisted. */
    async unlistedMachines(tx: Tx = db): Promise<Set<number>> {
      return new Set((await tx.selectFrom('volume_unlisted').select('machine_id').execute()).map((r) => r.machine_id));
    },

    async isUnlisted(machineId: number, tx: Tx = db): Promise<boolean> {
      return (await tx.selectFrom('volume_unlisted').select('machine_id').where('machine_id', '=', machineId).executeTakeFirst()) !== undefined;
    },

    /** Unlists (`listed` false) or lists again the machine's volume offer; idempotent. */
    async setListed(machineId: number, listed: boolean, at: number, tx: Tx = db): Promise<void> {
      if (listed) await tx.deleteFrom('volume_unlisted').where('machine_id', '=', machineId).execute();
      else await tx.insertInto('volume_unlisted').values({ machine_id: machineId, unlisted_at: at }).onConflict((oc) => oc.column('machine_id').doNothing()).execute();
    },

    async markDeleted(id: number, at: number, tx: Tx = db): Promise<void> {
      await tx.updateTable('volumes').set({ deleted_at: at }).where('id', '=', id).execute();
    },

    async mount(m: MountRow, tx: Tx = db): Promise<void> {
      await tx.insertInto('volume_mounts').values(m).execute();
    },

    async mountsOf(volumeIds: number[], tx: Tx = db): Promise<MountRow[]> {
      if (volumeIds.length === 0) return [];
      return tx.selectFrom('volume_mounts').selectAll().where('volume_id', 'in', volumeIds).orderBy('instance_id').execute();
    },

    async unmountInstance(instanceId: number, tx: Tx = db): Promise<void> {
      await unmountOf(tx, { instanceId });
    },

    /** Every machine's volume ask (`create_asks` vol_size/vol_price), by machine. */
    async asks(tx: Tx = db): Promise<Map<number, VolumeAskRow>> {
      return new Map((await tx.selectFrom('volume_asks').selectAll().execute()).map((r) => [r.machine_id, r]));
    },

    async askOf(machineId: number, tx: Tx = db): Promise<VolumeAskRow | undefined> {
      return tx.selectFrom('volume_asks').selectAll().where('machine_id', '=', machineId).executeTakeFirst();
    },

    async setAsk(row: VolumeAskRow, tx: Tx = db): Promise<void> {
      await tx.insertInto('volume_asks').values(row)
        .onConflict((oc) => oc.column('machine_id').doUpdateSet({ size_gb: row.size_gb, price_disk_micro: row.price_disk_micro, updated_at: row.updated_at }))
        .execute();
    },

    /** The machine's live volumes, by id (what its agent keeps as Docker volumes). */
    async liveOnMachine(machineId: number, tx: Tx = db): Promise<{ id: number; size_gb: number }[]> {
      return tx.selectFrom('volumes').select(['id', 'size_gb']).where('machine_id', '=', machineId).where('deleted_at', 'is', null).orderBy('id').execute();
    },

    /** Where the machine's live volumes are mounted: by instance. */
    async mountsOnMachine(machineId: number, tx: Tx = db): Promise<MountRow[]> {
      return tx.selectFrom('volume_mounts').selectAll('volume_mounts')
        .innerJoin('volumes', 'volumes.id', 'volume_mounts.volume_id')
        .where('volumes.machine_id', '=', machineId).where('volumes.deleted_at', 'is', null)
        .orderBy('volume_mounts.instance_id').orderBy('volume_mounts.volume_id').execute();
    },
  };
}

/**
 * The volumes part of a machine's desired-state fingerprint (agent-server-store.ts `fingerprints`): per machine, how
 * many volumes were ever made, the newest id, and how many are deleted. A volume made or deleted moves it; mounts come
 * and go with instances, which the instances' parts follow.
 */
export function volumeFingerprintPart(machineIds: RawBuilder<unknown>, num: (e: RawBuilder<unknown>) => RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`select machine_id, 'v' as k, ${num(sql`count(*)`)} as a, ${num(sql`max(id)`)} as b, ${num(sql`sum(case when deleted_at is null then 0 else 1 end)`)} as c
    from volumes where machine_id in (${machineIds}) group by machine_id`;
}

export type VolumesStore = ReturnType<typeof volumesStore>;

/**
 * Whether the machine has a live volume: its desired state then lists it, so its heartbeat cannot take the idle
 * machines' one-statement path (agent-server-store.ts `idle`, whose desired state is the empty one).
 */
export function liveVolumeOn(machineId: Expression<number>): Expression<SqlBool> {
  const eb = expressionBuilder<Database, never>();
  return eb.exists(eb.selectFrom('volumes').select('volumes.id').where('volumes.machine_id', '=', machineId).where('volumes.deleted_at', 'is', null));
}

/** SQL of the emulator's host events (events-tables.ts). */
import type { Db, Tx } from '../../platform/db/connect.js';
import type { EmuHostEventsTable } from './events-tables.js';

/** A host event as read: ids and JSON decoded. */
export interface HostEventRow {
  id: number;
  kind: string;
  at: number;
  ends_at: number | null;
  machine_ids: number[];
  params: Record<string, unknown>;
  seed: number;
  state: 'pending' | 'active' | 'done';
  instance_ids: number[];
  created_at: number;
  started_at: number | null;
  ended_at: number | null;
}

type Raw = Omit<EmuHostEventsTable, 'id'> & { id: number };

const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

function decode(r: Raw): HostEventRow {
  return {
    id: Number(r.id),
    kind: r.kind,
    at: Number(r.at),
    ends_at: num(r.ends_at),
    machine_ids: JSON.parse(r.machine_ids) as number[],
    params: JSON.parse(r.params) as Record<string, unknown>,
    seed: Number(r.seed),
    state: r.state as HostEventRow['state'],
    instance_ids: JSON.parse(r.instance_ids) as number[],
    created_at: Number(r.created_at),
    started_at: num(r.started_at),
    ended_at: num(r.ended_at),
  };
}

export function eventsStore(db: Db, dialect: 'sqlite' | 'postgres') {
  return {
    async insert(tx: Tx, e: Omit<HostEventRow, 'id'>): Promise<HostEventRow> {
      const row = await tx
        .insertInto('emu_host_events')
        .values({
          kind: e.kind, at: e.at, ends_at: e.ends_at, machine_ids: JSON.stringify(e.machine_ids), params: JSON.stringify(e.params),
          seed: e.seed, state: e.state, instance_ids: JSON.stringify(e.instance_ids), created_at: e.created_at,
          started_at: e.started_at, ended_at: e.ended_at,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      return decode(row as Raw);
    },

    /** The event, its row locked until `tx` ends (PostgreSQL), so its job and a clear never act on it at once. */
    async lock(tx: Tx, id: number): Promise<HostEventRow | undefined> {
      let q = tx.selectFrom('emu_host_events').selectAll().where('id', '=', id);
      if (dialect === 'postgres') q = q.forUpdate();
      const row = await q.executeTakeFirst();
      return row && decode(row as Raw);
    },

    async list(tx: Tx | Db = db): Promise<HostEventRow[]> {
      return (await tx.selectFrom('emu_host_events').selectAll().orderBy('id').execute()).map((r) => decode(r as Raw));
    },

    async update(tx: Tx, id: number, patch: Partial<Pick<HostEventRow, 'state' | 'instance_ids' | 'started_at' | 'ended_at'>>): Promise<void> {
      const { instance_ids, ...rest } = patch;
      await tx
        .updateTable('emu_host_events')
        .set({ ...rest, ...(instance_ids ? { instance_ids: JSON.stringify(instance_ids) } : {}) })
        .where('id', '=', id)
        .execute();
    },

    /** The machines drawn for the event and the seed they were drawn with. */
    async setMachines(tx: Tx, id: number, machineIds: number[], seed: number): Promise<void> {
      await tx.updateTable('emu_host_events').set({ machine_ids: JSON.stringify(machineIds), seed }).where('id', '=', id).execute();
    },

    async get(id: number, tx: Tx = db): Promise<HostEventRow | undefined> {
      const row = await tx.selectFrom('emu_host_events').selectAll().where('id', '=', id).executeTakeFirst();
      return row && decode(row as Raw);
    },

    /** Active events of one kind (the GPUs `gpu_lost` events hold lost, read on every list of instances). */
    async activeOfKind(kind: string, tx: Tx = db): Promise<HostEventRow[]> {
      return (await tx.selectFrom('emu_host_events').selectAll().where('kind', '=', kind).where('state', '=', 'active').orderBy('id').execute()).map((r) => decode(r as Raw));
    },

    async remove(tx: Tx, id: number): Promise<void> {
      await tx.deleteFrom('emu_host_events').where('id', '=', id).execute();
    },
  };
}

export type EventsStore = ReturnType<typeof eventsStore>;

import { sql, type Expression, type Selectable, type SqlBool } from 'kysely';
import type { DialectName, Tx } from '../platform/db/connect.js';
import { prepared, preparedForOne } from '../platform/db/prepared.js';
import type { FleetMachinesTable } from './machines-tables.js';
import type { MachineSpec, NewMachine } from './machines-catalogue.js';
import { driverCode, type GpuHold, type MachineFault, type MachineRecord, type MaintWindow } from './machines-offers-contract.js';

export type MachineRow = Selectable<FleetMachinesTable> & { verification: string };

/** Rows per INSERT: well inside SQLite's 32,766 bound parameters at 17 columns per machine. */
const INSERT_CHUNK = 500;

const NO_WINDOWS: readonly MaintWindow[] = Object.freeze([]);
const parseMaint = (text: string): MaintWindow[] =>
  (JSON.parse(text) as [number, number, number, string][]).map(([start, end, hours, category]) => ({ start, end, hours, category }));

export function toRecord(r: MachineRow): MachineRecord {
  const spec = JSON.parse(r.spec) as MachineSpec;
  return {
    id: r.id,
    host_id: r.host_id,
    // Declared hardware is never verified, whatever its host's standing.
    verification: spec.hardware_declared ? 'unverified' : r.verification,
    gpu_name: r.gpu_name,
    num_gpus: r.num_gpus,
    price_gpu_micro: Number(r.price_gpu_micro),
    price_disk_micro: Number(r.price_disk_micro),
    price_inetu_micro: Number(r.price_inetu_micro),
    price_inetd_micro: Number(r.price_inetd_micro),
    min_bid_micro: Number(r.min_bid_micro),
    public_ipaddr: r.public_ipaddr,
    direct_port_start: r.direct_port_start,
    direct_port_count: r.direct_port_count,
    vms_enabled: r.vms_enabled === 1,
    fault: r.fault as MachineFault,
    end_date: r.end_date,
    listed: r.listed === 1 && r.deleted !== 1,
    deleted: r.deleted === 1,
    min_chunk: r.min_chunk,
    credit_discount_max: Number(r.credit_discount_max),
    listing_duration: r.listing_duration === null ? null : Number(r.listing_duration),
    maint: r.maint ? parseMaint(r.maint) : NO_WINDOWS,
    spec,
    driver_code: driverCode(spec.driver_version),
  };
}

/** What `changesSince` found: the state, and the changed machines with their GPUs. */
export interface MachinesChanges {
  state: { version: number; epoch: string };
  machines: Array<{ row: MachineRow; gpus: GpuHold[] }>;
  complete: boolean;
}

type ChangeRow = { state_version: number; state_epoch: string; gpus_json: [number, number | null, string | null, number | null][] | null } & (
  | MachineRow
  | { [K in keyof MachineRow]: null }
);

export function machinesStore(db: Tx, dialect: DialectName) {
  const machines = (tx: Tx) =>
    tx
      .selectFrom('fleet_machines as m')
      .innerJoin('fleet_hosts as h', 'h.id', 'm.host_id')
      .selectAll('m')
      .select('h.verification');
  // The statements of renting and booting (platform/db/prepared.ts).
  // `machinesByIds`, and `machine` (of one).
  const machinesById = preparedForOne(db, [], (tx, ids) => machines(tx).where('m.id', 'in', ids));
  // The machine row only (`OF m`): its host's row is shared by all the host's machines, and locking it too made every
  // lock of any machine of one host wait for every other (10,000 agents of one host: reports queued for seconds).
  const lockMachineById = prepared(['id'], (q: { id: number }) => machines(db).where('m.id', '=', q.id).forUpdate(['m']));
  const lockMachineRow = prepared(['id'], (q: { id: number }) => db.selectFrom('fleet_machines').select('id').where('id', '=', q.id).forUpdate());
  // An allocation's read of its machine (PostgreSQL): the row locked and marked changed (`bump`) by the read itself, one
  // statement where a select for update, a later mark and a read of the version were three. The machine row only, as
  // above: an UPDATE locks its target's rows, not its host's.
  const markAndReadMachine = prepared(['id'], (q: { id: number }) =>
    db.updateTable('fleet_machines as m').set({ version: sql`m.version` }).from('fleet_hosts as h')
      .whereRef('h.id', '=', 'm.host_id').where('m.id', '=', q.id).returningAll('m').returning('h.verification'),
  );
  const changesQuery = prepared(['since', 'epoch', 'limit'], (q: { since: number; epoch: string; limit: number }) => ({
    compile: () => sql<ChangeRow>`SELECT s.version AS state_version, s.epoch AS state_epoch, c.*
      FROM fleet_state s
      LEFT JOIN LATERAL (
        SELECT m.*, h.verification,
          (SELECT json_agg(json_build_array(g.gpu_index, g.instance_id, g.hold_kind, g.bid_micro) ORDER BY g.gpu_index)
             FROM fleet_gpus g WHERE g.machine_id = m.id) AS gpus_json
        FROM fleet_machines m INNER JOIN fleet_hosts h ON h.id = m.host_id
        WHERE m.version > ${q.since} AND s.epoch = ${q.epoch}
        ORDER BY m.version LIMIT ${q.limit}
      ) c ON true
      WHERE s.id = 1`.compile(db),
  }));
  // `gpusOf`, and `gpus` (of one machine).
  const gpusOfMachines = preparedForOne(db, [], (tx, ids) =>
    tx.selectFrom('fleet_gpus').select(['machine_id', 'gpu_index', 'instance_id', 'hold_kind', 'bid_micro'])
      .where('machine_id', 'in', ids).orderBy('machine_id').orderBy('gpu_index'));
  const bumpVersion = prepared([], () => db.updateTable('fleet_state').set({ version: sql`version + 1` }).where('id', '=', 1).returning('version'));
  // `bump`: machines stamped with a version (SQLite) or marked changed (PostgreSQL); most writes change one machine.
  const stampMachines = preparedForOne(db, ['version'], (tx, ids, q: { version: number }) =>
    tx.updateTable('fleet_machines').set({ version: q.version }).where('id', 'in', ids));
  const markMachines = preparedForOne(db, [], (tx, ids) => tx.updateTable('fleet_machines').set({ version: sql`version` }).where('id', 'in', ids));
  // `releaseAll`, by instance ids (a destroy releases its one instance's GPUs): the machines holding them marked
  // (PostgreSQL) or read (SQLite), then the GPUs freed.
  const markHoldersOf = preparedForOne(db, [], (tx, instanceIds) =>
    tx.updateTable('fleet_machines').set({ version: sql`version` })
      .where('id', 'in', tx.selectFrom('fleet_gpus').select('machine_id').where('instance_id', 'in', instanceIds)).returning('id'));
  const holdersOf = preparedForOne(db, [], (tx, instanceIds) =>
    tx.selectFrom('fleet_gpus').select('machine_id').distinct().where('instance_id', 'in', instanceIds));
  const releaseOf = preparedForOne(db, [], (tx, instanceIds) =>
    tx.updateTable('fleet_gpus').set({ instance_id: null, hold_kind: null, bid_micro: null }).where('instance_id', 'in', instanceIds));
  // `hold`: GPUs given to an instance where they are free or held by one of `displaceable`.
  type HoldQuery = { machine: number; gpus: readonly number[]; instance: number; kind: string; bid: number | null; displaceable: readonly number[] };
  const holdQuery = (tx: Tx, q: HoldQuery) =>
    tx
      .updateTable('fleet_gpus')
      .set({ instance_id: q.instance, hold_kind: q.kind, bid_micro: q.bid })
      .where('machine_id', '=', q.machine)
      .where('gpu_index', 'in', q.gpus)
      .where((eb) => (q.displaceable.length ? eb.or([eb('instance_id', 'is', null), eb('instance_id', 'in', q.displaceable)]) : eb('instance_id', 'is', null)));
  // One GPU, displacing nobody but the instance itself (most rents and starts): compiled once.
  const holdFree = prepared(['machine', 'gpu', 'instance', 'kind', 'bid'], (q: { machine: number; gpu: number; instance: number; kind: string; bid: number | null }) =>
    holdQuery(db, { ...q, gpus: [q.gpu], displaceable: [q.instance] }));

  /**
   * PostgreSQL: the fleet state and, while its epoch is still `epoch`, the machines stamped above `since` with their
   * GPUs, at most `limit` of them, in one statement, so one snapshot (an offer search's freshness check was a state
   * read, then two more statements whenever another writer had changed the fleet). `complete` is false when the
   * epoch changed or the limit cut the rows short: the caller reads them the long way. Undefined without a state row.
   */
  async function changesSince(since: number, epoch: string, limit: number): Promise<MachinesChanges | undefined> {
    const { rows } = await changesQuery(db, { since, epoch, limit });
    if (!rows.length) return undefined;
    const state = { version: Number(rows[0].state_version), epoch: rows[0].state_epoch };
    if (state.epoch !== epoch) return { state, machines: [], complete: false };
    const machines: MachinesChanges['machines'] = [];
    for (const r of rows) {
      if (r.id === null) continue; // the state alone: nothing changed
      const { state_version: _v, state_epoch: _e, gpus_json, ...row } = r;
      const gpus = (gpus_json ?? []).map(([gpu_index, instance_id, hold_kind, bid]) => ({ gpu_index, instance_id, hold_kind, bid_micro: bid === null ? null : Number(bid) }));
      machines.push({ row: row as MachineRow, gpus });
    }
    return { state, machines, complete: machines.length < limit };
  }

  return {
    dialect,
    /** PostgreSQL only (SQLite reads are in-process: the state read and the reload cost no round trips). */
    changesSince: dialect === 'postgres' ? changesSince : undefined,

    async state(tx: Tx = db): Promise<{ version: number; epoch: string } | undefined> {
      const r = await tx.selectFrom('fleet_state').select(['version', 'epoch']).where('id', '=', 1).executeTakeFirst();
      return r && { version: Number(r.version), epoch: r.epoch };
    },

    /**
     * Creates the state row unless one exists; true when this call created it. On PostgreSQL a second process's
     * insert waits for the first transaction and then does nothing, so only one process seeds.
     */
    async initState(tx: Tx, epoch: string): Promise<boolean> {
      const r = await tx
        .insertInto('fleet_state')
        .values({ id: 1, version: 1, epoch })
        .onConflict((oc) => oc.column('id').doNothing())
        .returning('id')
        .executeTakeFirst();
      return r !== undefined;
    },

    /**
     * The version a machine about to be inserted is written with. On PostgreSQL the current one, read without taking
     * the state row's lock (holding it for the rest of the transaction, while commit-time stamps of other writers wait
     * for it, deadlocked concurrent registrations): the caller marks the new machine with `bump`, and its commit stamps
     * it. On SQLite a new version, as before.
     */
    async insertVersion(tx: Tx): Promise<number> {
      if (dialect === 'postgres') return (await this.state(tx))?.version ?? 0;
      const r = (await bumpVersion(tx, {})).rows[0];
      if (!r) throw new Error('fleet state row missing');
      return Number(r.version);
    },

    /**
     * Marks machines as changed, so that every process's offer index reloads them. SQLite: bumps the fleet version
     * and stamps the machines with it (one writer at a time, so versions follow commit order). PostgreSQL: only marks
     * them (`SET version = version`); a deferred trigger bumps the version and stamps them as the transaction commits
     * (migration 0036), so no fleet writer holds the state row's lock longer than its commit.
     */
    async bump(tx: Tx, machineIds: number[]): Promise<void> {
      if (!machineIds.length) return;
      if (dialect === 'postgres') {
        await markMachines(tx, machineIds);
        return;
      }
      await stampMachines(tx, machineIds, { version: await this.insertVersion(tx) });
    },

    async machine(id: number, tx: Tx = db, lock = false): Promise<MachineRow | undefined> {
      const { rows } = lock && dialect === 'postgres' ? await lockMachineById(tx, { id }) : await machinesById(tx, [id]);
      return rows[0] as MachineRow | undefined;
    },

    /** Several machines in one statement (those that exist). */
    async machinesByIds(ids: number[], tx: Tx = db): Promise<MachineRow[]> {
      if (!ids.length) return [];
      return (await machinesById(tx, ids)).rows as MachineRow[];
    },

    /**
     * The machine about to change in `tx`: on PostgreSQL its row is locked until `tx` ends and marked changed (as
     * `bump` marks it) by the one statement that reads it; on SQLite it is read (the caller bumps it).
     */
    async machineToChange(id: number, tx: Tx): Promise<MachineRow | undefined> {
      const { rows } = dialect === 'postgres' ? await markAndReadMachine(tx, { id }) : await machinesById(tx, [id]);
      return rows[0] as MachineRow | undefined;
    },

    /** Locks the machine's row alone (not its host's) until `tx` ends; PostgreSQL only. */
    async lockMachine(tx: Tx, id: number): Promise<void> {
      if (dialect === 'postgres') await lockMachineRow(tx, { id });
    },

    /** MachinesApi.machineLockCondition. */
    machineLockCondition(machineId: Expression<number | null>): Expression<SqlBool> {
      // Counting the rows a locking subquery gives is always true, whether the machine exists or not; the subquery is
      // never pulled up into the caller's query (it has a FOR UPDATE) and runs when the caller's filter reaches it.
      return dialect === 'postgres'
        ? sql<SqlBool>`((SELECT count(*) FROM (SELECT lm.id FROM fleet_machines lm WHERE lm.id = ${machineId} FOR UPDATE) AS locked_machine) >= 0)`
        : sql<SqlBool>`1 = 1`;
    },

    /**
     * Locks, in id order, those of the machines' rows (not their hosts') no other transaction holds, and reads them, in
     * one statement (PostgreSQL; SQLite reads them all).
     */
    async lockIdleMachines(tx: Tx, ids: readonly number[]): Promise<MachineRow[]> {
      if (!ids.length) return [];
      let q = machines(tx).where('m.id', 'in', [...ids]).orderBy('m.id');
      if (dialect === 'postgres') q = q.forUpdate(['m']).skipLocked();
      return (await q.execute()) as MachineRow[];
    },

    async machinesAbove(version: number, tx: Tx = db): Promise<MachineRow[]> {
      return (await machines(tx).where('m.version', '>', version).execute()) as MachineRow[];
    },

    async gpus(machineId: number, tx: Tx = db): Promise<GpuHold[]> {
      return (await this.gpusOf([machineId], tx)).get(machineId) ?? [];
    },

    /** GPUs of many machines, grouped by machine. */
    async gpusOf(machineIds: number[], tx: Tx = db): Promise<Map<number, GpuHold[]>> {
      const out = new Map<number, GpuHold[]>();
      for (let i = 0; i < machineIds.length; i += 5000) {
        const { rows } = await gpusOfMachines(tx, machineIds.slice(i, i + 5000));
        for (const g of rows) {
          let list = out.get(g.machine_id);
          if (!list) out.set(g.machine_id, (list = []));
          list.push({ gpu_index: g.gpu_index, instance_id: g.instance_id, hold_kind: g.hold_kind, bid_micro: g.bid_micro === null ? null : Number(g.bid_micro) });
        }
      }
      return out;
    },

    /**
     * Gives GPUs to an instance, only where they are free or held by one of `displaceable`. Returns how many rows
     * changed: fewer than asked means someone else got there first, and the caller must fail.
     */
    async hold(
      tx: Tx,
      machineId: number,
      gpuIndexes: number[],
      h: { instanceId: number; kind: string; bidMicro: number | null },
      displaceable: number[],
    ): Promise<number> {
      const q = { machine: machineId, instance: h.instanceId, kind: h.kind, bid: h.bidMicro };
      const r = gpuIndexes.length === 1 && displaceable.length === 1 && displaceable[0] === h.instanceId
        ? await holdFree(tx, { ...q, gpu: gpuIndexes[0] })
        : await tx.executeQuery(holdQuery(tx, { ...q, gpus: gpuIndexes, displaceable }));
      return Number(r.numAffectedRows);
    },

    /** Frees the instances' GPUs; their machines. On PostgreSQL the machines are marked changed already (`bump`). */
    async releaseAll(tx: Tx, instanceIds: number[]): Promise<number[]> {
      if (!instanceIds.length) return [];
      // PostgreSQL: the machine rows first, as an allocation takes them (machine, then its GPUs): marked (`bump`), and
      // so locked, by the statement that finds them.
      const machineIds = dialect === 'postgres'
        ? (await markHoldersOf(tx, instanceIds)).rows.map((r) => r.id)
        : (await holdersOf(tx, instanceIds)).rows.map((r) => r.machine_id);
      if (!machineIds.length) return [];
      await releaseOf(tx, instanceIds);
      return machineIds.sort((a, b) => a - b);
    },

    async setBid(tx: Tx, instanceId: number, bidMicro: number): Promise<number[]> {
      const rows = await tx.selectFrom('fleet_gpus').select('machine_id').distinct().where('instance_id', '=', instanceId).where('hold_kind', '=', 'bid').execute();
      if (!rows.length) return [];
      await tx.updateTable('fleet_gpus').set({ bid_micro: bidMicro }).where('instance_id', '=', instanceId).where('hold_kind', '=', 'bid').execute();
      return rows.map((r) => r.machine_id);
    },

    /** Sets the machine's fault; returns the fault it had, or undefined when there is no such machine. */
    async setFault(tx: Tx, machineId: number, fault: MachineFault): Promise<{ before: string | null } | undefined> {
      const row = await tx.selectFrom('fleet_machines').select('fault').where('id', '=', machineId).executeTakeFirst();
      if (!row) return undefined;
      await tx.updateTable('fleet_machines').set({ fault }).where('id', '=', machineId).execute();
      return { before: row.fault };
    },

    /**
     * The host id of a user, created on first use (a host is a user: migration 0018_machines_host_user). Safe when two
     * requests of one user race: the unique index lets one insert win, and the other reads its row.
     */
    async hostOfUser(tx: Tx, userId: number, now: number): Promise<number> {
      const found = await tx.selectFrom('fleet_hosts').select('id').where('user_id', '=', userId).executeTakeFirst();
      if (found) return found.id;
      await tx
        .insertInto('fleet_hosts')
        .values({ user_id: userId, verification: 'unverified', created_at: now })
        .onConflict((oc) => oc.column('user_id').doNothing())
        .execute();
      const row = await tx.selectFrom('fleet_hosts').select('id').where('user_id', '=', userId).executeTakeFirstOrThrow();
      return row.id;
    },

    /** The user behind a host, or null for a simulated host (or an unknown id). */
    async userOfHost(hostId: number, tx: Tx = db): Promise<number | null> {
      const row = await tx.selectFrom('fleet_hosts').select('user_id').where('id', '=', hostId).executeTakeFirst();
      return row?.user_id ?? null;
    },

    /** Inserts one machine and its GPUs on an existing host (a real host's machine, from `gpuplane agent`). */
    async insertMachineOnHost(tx: Tx, hostId: number, m: NewMachine, opts: { now: number; version: number }): Promise<number> {
      const row = await tx
        .insertInto('fleet_machines')
        .values({
          host_id: hostId, gpu_name: m.gpu_name, num_gpus: m.num_gpus, price_gpu_micro: m.price_gpu_micro,
          price_disk_micro: m.price_disk_micro, price_inetu_micro: m.price_inetu_micro, price_inetd_micro: m.price_inetd_micro,
          min_bid_micro: m.min_bid_micro, public_ipaddr: m.public_ipaddr, direct_port_start: m.direct_port_start,
          direct_port_count: m.direct_port_count, vms_enabled: m.vms_enabled ? 1 : 0, fault: null, heartbeat_at: opts.now,
          end_date: opts.now + m.listed_for, spec: JSON.stringify(m.spec), version: opts.version, created_at: opts.now,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      const gpus = Array.from({ length: m.num_gpus }, (_, g) => ({ machine_id: row.id, gpu_index: g, instance_id: null, hold_kind: null, bid_micro: null }));
      await tx.insertInto('fleet_gpus').values(gpus).execute();
      return row.id;
    },

    /** Rewrites a machine's hardware description (a real host reported new hardware). */
    /** A real host's reported hardware: where it is reached, and (when given) what it is. */
    async updateHardware(
      tx: Tx, id: number,
      patch: { public_ipaddr: string; direct_port_start: number; direct_port_count: number } & ({ gpu_name: string; spec: MachineSpec } | { gpu_name?: never; spec?: never }),
    ): Promise<void> {
      const { spec, ...rest } = patch;
      await tx.updateTable('fleet_machines').set({ ...rest, ...(spec ? { spec: JSON.stringify(spec) } : {}) }).where('id', '=', id).execute();
    },

    async gpuNames(tx: Tx = db): Promise<string[]> {
      const rows = await tx.selectFrom('fleet_machines').select('gpu_name').distinct().orderBy('gpu_name').execute();
      return rows.map((r) => r.gpu_name);
    },

    /** A machine just inserted, not listed yet (as after registration by the agent); the caller bumps its version. */
    async markUnlisted(tx: Tx, id: number): Promise<void> {
      await tx.updateTable('fleet_machines').set({ listed: 0 }).where('id', '=', id).execute();
    },

    /**
     * Inserts machines (each on a host of its own unless `hostOf` groups them), their GPUs, all at `version`.
     * `numberFromOne` (seeding an empty fleet) numbers hosts and machines 1, 2, … so that a re-seeded fleet has the
     * same ids as before.
     * Ids come back in insertion order: both dialects number the rows of one INSERT in VALUES order.
     */
    async insertMachines(
      tx: Tx,
      list: NewMachine[],
      opts: { now: number; version: number; hostOf?: (i: number) => number; numberFromOne?: boolean; hostId?: number },
    ): Promise<number[]> {
      const hostKey = opts.hostOf ?? ((i: number) => i);
      const hostIndex = new Map<number, number>();
      const hostRows: { id?: number; verification: string; created_at: number }[] = [];
      list.forEach((m, i) => {
        const key = hostKey(i);
        if (!hostIndex.has(key)) {
          hostIndex.set(key, hostRows.length);
          hostRows.push({ verification: m.verification, created_at: opts.now, ...(opts.numberFromOne ? { id: hostRows.length + 1 } : {}) });
        }
      });
      const hostIds: number[] = opts.hostId === undefined ? [] : hostRows.map(() => opts.hostId!);
      for (let i = 0; opts.hostId === undefined && i < hostRows.length; i += INSERT_CHUNK) {
        const ids = await tx.insertInto('fleet_hosts').values(hostRows.slice(i, i + INSERT_CHUNK)).returning('id').execute();
        hostIds.push(...ids.map((r) => r.id).sort((a, b) => a - b));
      }
      const machineIds: number[] = [];
      for (let i = 0; i < list.length; i += INSERT_CHUNK) {
        const chunk = list.slice(i, i + INSERT_CHUNK).map((m, j) => ({
          host_id: hostIds[hostIndex.get(hostKey(i + j))!],
          gpu_name: m.gpu_name,
          num_gpus: m.num_gpus,
          price_gpu_micro: m.price_gpu_micro,
          price_disk_micro: m.price_disk_micro,
          price_inetu_micro: m.price_inetu_micro,
          price_inetd_micro: m.price_inetd_micro,
          min_bid_micro: m.min_bid_micro,
          public_ipaddr: m.public_ipaddr,
          direct_port_start: m.direct_port_start,
          direct_port_count: m.direct_port_count,
          vms_enabled: m.vms_enabled ? 1 : 0,
          fault: null,
          heartbeat_at: opts.now,
          end_date: opts.now + m.listed_for,
          spec: JSON.stringify(m.spec),
          version: opts.version,
          created_at: opts.now,
          ...(opts.numberFromOne ? { id: i + j + 1 } : {}),
        }));
        const ids = await tx.insertInto('fleet_machines').values(chunk).returning('id').execute();
        machineIds.push(...ids.map((r) => r.id).sort((a, b) => a - b));
      }
      const gpuRows = list.flatMap((m, i) =>
        Array.from({ length: m.num_gpus }, (_, g) => ({ machine_id: machineIds[i], gpu_index: g, instance_id: null, hold_kind: null, bid_micro: null })),
      );
      for (let i = 0; i < gpuRows.length; i += INSERT_CHUNK * 4) {
        await tx.insertInto('fleet_gpus').values(gpuRows.slice(i, i + INSERT_CHUNK * 4)).execute();
      }
      // Explicit ids do not move PostgreSQL's sequences; later machines must number on from the seeded ones.
      if (opts.numberFromOne && dialect === 'postgres') {
        for (const t of ['fleet_hosts', 'fleet_machines']) {
          await sql`SELECT setval(pg_get_serial_sequence(${t}, 'id'), (SELECT COALESCE(MAX(id), 0) + 1 FROM ${sql.table(t)}), false)`.execute(tx);
        }
      }
      return machineIds;
    },
  };
}

export type MachinesStore = ReturnType<typeof machinesStore>;

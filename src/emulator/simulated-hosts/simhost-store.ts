/**
 * SQL of the simulated hosts (simhost-tables.ts): their containers, images, the agent's records and faults, and the
 * work due for their agent. Every function takes the caller's transaction.
 */
import { sql, type Selectable } from 'kysely';
import type { DialectName, Tx } from '../../platform/db/connect.js';
import { prepared } from '../../platform/db/prepared.js';
import { rowsTable } from '../../platform/db/values.js';
import type { SimContainersTable, SimInstancesTable } from './simhost-tables.js';
import { MANUAL_GATE_AT, gatePrefix, type LoadedTransitions, type TransitionMode } from '../emu-transitions/transitions-rules.js';

export type SimContainerRow = Selectable<SimContainersTable>;
export type SimInstanceRow = Selectable<SimInstancesTable>;

/** Simulated machines' state as a pass loads it (`load`), by machine. */
export interface LoadedRuntimes {
  containers: Map<number, SimContainerRow[]>;
  images: Map<number, Map<string, number | null>>;
  instances: Map<number, SimInstanceRow[]>;
  /** The transition rules and slow-pull windows that bear on these machines (issue 34, emu-transitions/). */
  transitions: LoadedTransitions;
}

/** What a pass changed of its machines' runtimes (simhost-runtime.ts `changes`), written back by `saveRuntimes`. */
export interface RuntimeChanges {
  machineId: number;
  /** Containers made in the pass (with a provisional id below 0), in the order they were made. */
  inserts: SimContainerRow[];
  updates: Pick<SimContainerRow, 'id' | 'status' | 'exit_code' | 'finished_at' | 'ports'>[];
  deletes: number[];
  imagePuts: [string, number | null][];
  imageDrops: string[];
}

const byMachine = <R extends { machine_id: number }>(ids: readonly number[], rows: readonly R[]): Map<number, R[]> => {
  const out = new Map<number, R[]>(ids.map((id) => [id, []]));
  for (const r of rows) out.get(r.machine_id)?.push(r);
  return out;
};

/**
 * Namespace of the PostgreSQL advisory locks that serialize a simulated machine's runtime (its agent's passes), one
 * per schema: advisory locks are the whole database's, and several gpuplane databases may share one PostgreSQL, a
 * schema each (README). With one namespace for all, a pass in one schema skipped the machine of the same id in
 * another (`claimDue` takes only locks it gets at once), and that machine's work slipped to a later run.
 */
const MACHINE_RUNTIME_LOCK = sql<number>`(cast(${0x73696d} as integer) # hashtext(current_schema()))`; // "sim"

/**
 * The transition rules and slow-pull windows of the emulator's control API (emu-transitions/transitions-tables.ts)
 * that bear on these machines at `now`, in one statement: the kind's rule, the rules of their instances
 * (`instanceIds`, as their desired states list them), and their open windows. Read here as the agent's input, like its desired state: the rules decide when it acts.
 */
async function transitionsOf(tx: Tx, machineIds: number[], instanceIds: readonly number[], now: number): Promise<LoadedTransitions> {
  const ids = sql.join(machineIds.map((id) => sql`${id}`));
  const own = instanceIds.length ? sql`instance_id IS NULL OR instance_id IN (${sql.join(instanceIds.map((id) => sql`${id}`))})` : sql`instance_id IS NULL`;
  const rows = (await sql<{ src: string; id: number | null; mode: string | null; seconds: number | null }>`
    SELECT 'rule' AS src, instance_id AS id, mode, seconds FROM emu_transitions
      WHERE kind = 'instance' AND (${own})
    UNION ALL
    SELECT 'slow' AS src, machine_id AS id, NULL AS mode, pull_seconds AS seconds FROM emu_slow_pulls
      WHERE machine_id IN (${ids}) AND (until IS NULL OR until > ${now})`.execute(tx)).rows;
  const t: LoadedTransitions = { kind: undefined, instances: new Map(), slowPulls: new Map() };
  for (const r of rows) {
    const seconds = r.seconds === null ? null : Number(r.seconds);
    if (r.src === 'slow') t.slowPulls.set(Number(r.id), Math.max(t.slowPulls.get(Number(r.id)) ?? 0, seconds ?? 0));
    else if (r.id === null) t.kind = { mode: r.mode as TransitionMode, seconds };
    else t.instances.set(Number(r.id), { mode: r.mode as TransitionMode, seconds });
  }
  return t;
}

export function simhostStore(db: Tx, dialect: DialectName) {
  const pg = dialect === 'postgres';
  // Every desired-state change of any machine runs it (inside the changing transaction). A real host's machine (one
  // with an agent row: a read of the hosts feature's table) has an agent of its own, so nothing is due for ours.
  const dueIfSimulated = (q: { machine_id: number; due_at: number }) =>
    db.insertInto('sim_due').columns(['machine_id', 'due_at']).expression(
      db.selectNoFrom([sql<number>`cast(${q.machine_id} as integer)`.as('machine_id'), sql<number>`cast(${q.due_at} as double precision)`.as('due_at')])
        .where((w) => w.not(w.exists(w.selectFrom('agent_machines').select('agent_machines.machine_id').where('agent_machines.machine_id', '=', q.machine_id)))),
    ).returning('machine_id');
  const selectContainers = prepared(['machine_id'], (q: { machine_id: number }) =>
    db.selectFrom('sim_containers').selectAll().where('machine_id', '=', q.machine_id).orderBy('id'));

  async function removeImage(tx: Tx, machineId: number, image: string): Promise<void> {
    await tx.deleteFrom('sim_images').where('machine_id', '=', machineId).where('image', '=', image).execute();
  }

  return {
    /**
     * Until the caller's transaction ends, no other transaction acts on the machine's simulated runtime (PostgreSQL;
     * SQLite serializes writers anyway). Taken before any instance row, by the agent's passes and by faults alike.
     */
    async lockMachine(tx: Tx, machineId: number): Promise<void> {
      if (pg) await sql`SELECT pg_advisory_xact_lock(${MACHINE_RUNTIME_LOCK}, ${machineId})`.execute(tx);
    },

    /**
     * The statement that records work due for a machine's agent at `due_at`, unless a real host runs the machine; it
     * returns what it recorded. Run with the scheduling of the job that will do the work (Scheduler.ensureAfter).
     */
    dueIfSimulated,

    /** Work due for machines (pulls that finish then), in one statement. */
    async addDue(tx: Tx, due: readonly { machine_id: number; due_at: number }[]): Promise<void> {
      if (due.length) await tx.insertInto('sim_due').values([...due]).execute();
    },

    /**
     * Machines with work due by `now` (the longest due first; `limit` at most), in machine order, each with whether
     * this transaction now holds its runtime lock. On PostgreSQL the same statement tries each lock without waiting
     * (`pg_try_advisory_xact_lock`): a machine whose lock another transaction holds (another process's pass, a fault)
     * is not taken, and nothing waits. SQLite serializes writers: every machine is taken.
     */
    async claimDue(tx: Tx, now: number, limit: number): Promise<{ machineId: number; locked: boolean }[]> {
      const due = tx.selectFrom('sim_due').select(['machine_id', (eb) => eb.fn.min('due_at').as('first')]).where('due_at', '<=', now)
        .groupBy('machine_id').orderBy('first').orderBy('machine_id').limit(limit);
      if (!pg) return (await due.execute()).map((r) => ({ machineId: r.machine_id, locked: true })).sort((a, b) => a.machineId - b.machineId);
      // A subquery with a LIMIT is never merged into its outer query: the locks are tried on the due machines only.
      const rows = await tx.selectFrom(due.as('d'))
        .select(['d.machine_id', sql<boolean>`pg_try_advisory_xact_lock(${MACHINE_RUNTIME_LOCK}, d.machine_id)`.as('locked')])
        .orderBy('d.machine_id').execute();
      return rows.map((r) => ({ machineId: r.machine_id, locked: r.locked }));
    },

    /** Takes the work due by `now` of these machines, in one statement; the machines that had some. */
    async takeDueOf(tx: Tx, machineIds: readonly number[], now: number): Promise<Set<number>> {
      if (machineIds.length === 0) return new Set();
      const rows = await tx.deleteFrom('sim_due').where('machine_id', 'in', machineIds).where('due_at', '<=', now).returning('machine_id').execute();
      return new Set(rows.map((r) => r.machine_id));
    },

    /** When the earliest work of any machine is due (a row `t`, null when none): for `Scheduler.ensureAtFirst`. */
    firstDue: db.selectFrom('sim_due').select((eb) => eb.fn.min('due_at').as('t')),

    /**
     * The runtimes of these machines (containers in id order, images, the agent's records) and the transition rules
     * and slow-pull windows open at `now` that bear on them and their instances (`instanceIds`), in four statements.
     */
    async load(tx: Tx, machineIds: readonly number[], instanceIds: readonly number[], now: number): Promise<LoadedRuntimes> {
      const ids = [...machineIds];
      const containers = await tx.selectFrom('sim_containers').selectAll().where('machine_id', 'in', ids).orderBy('id').execute();
      const images = await tx.selectFrom('sim_images').selectAll().where('machine_id', 'in', ids).execute();
      const instances = await tx.selectFrom('sim_instances').selectAll().where('machine_id', 'in', ids).execute();
      const imageMaps = new Map([...byMachine(ids, images)].map(([id, rows]) => [id, new Map(rows.map((r) => [r.image, r.ready_at === null ? null : Number(r.ready_at)]))]));
      return { containers: byMachine(ids, containers), images: imageMaps, instances: byMachine(ids, instances), transitions: await transitionsOf(tx, ids, instanceIds, now) };
    },

    /**
     * Writes back what passes changed of their runtimes, a statement per kind of change for all the machines: removed
     * containers first (a recreated container takes its old one's name), then changed ones, then new ones, whose ids
     * are set on the rows given; then images pulled and dropped.
     */
    async saveRuntimes(tx: Tx, changes: readonly RuntimeChanges[]): Promise<void> {
      const deletes = changes.flatMap((c) => c.deletes);
      if (deletes.length) await tx.deleteFrom('sim_containers').where('id', 'in', deletes).execute();
      const updates = changes.flatMap((c) => c.updates);
      if (updates.length) {
        const v = rowsTable(updates, { id: 'integer', status: 'text', exit_code: 'integer', finished_at: 'double precision', ports: 'text' });
        await sql`
          UPDATE sim_containers SET status = v.status, exit_code = v.exit_code, finished_at = v.finished_at, ports = v.ports
          FROM ${v} AS v WHERE sim_containers.id = v.id`.execute(tx);
      }
      const inserts = changes.flatMap((c) => c.inserts);
      if (inserts.length) {
        const made = await tx.insertInto('sim_containers').values(inserts.map(({ id: _provisional, ...row }) => row)).returning(['id', 'name']).execute();
        const ids = new Map(made.map((r) => [r.name, r.id]));
        for (const row of inserts) row.id = ids.get(row.name)!;
      }
      const puts = changes.flatMap((c) => c.imagePuts.map(([image, readyAt]) => ({ machine_id: c.machineId, image, ready_at: readyAt })));
      if (puts.length) {
        await tx.insertInto('sim_images').values(puts)
          .onConflict((oc) => oc.columns(['machine_id', 'image']).doUpdateSet((eb) => ({ ready_at: eb.ref('excluded.ready_at') }))).execute();
      }
      for (const c of changes) for (const image of c.imageDrops) await removeImage(tx, c.machineId, image);
    },

    async containers(tx: Tx, machineId: number): Promise<SimContainerRow[]> {
      return (await selectContainers(tx, { machine_id: machineId })).rows;
    },

    async removeContainersOf(tx: Tx, instanceIds: number[]): Promise<void> {
      if (instanceIds.length) await tx.deleteFrom('sim_containers').where('instance_id', 'in', instanceIds).execute();
    },

    async putImage(tx: Tx, machineId: number, image: string, readyAt: number | null): Promise<void> {
      await tx.insertInto('sim_images').values({ machine_id: machineId, image, ready_at: readyAt })
        .onConflict((oc) => oc.columns(['machine_id', 'image']).doUpdateSet({ ready_at: readyAt })).execute();
    },


    /** Hanging pulls of the machine (of these images, or all) finish at `now`. */
    async resumePulls(tx: Tx, machineId: number, now: number, images?: string[]): Promise<void> {
      if (images && images.length === 0) return;
      let q = tx.updateTable('sim_images').set({ ready_at: now }).where('machine_id', '=', machineId).where('ready_at', 'is', null);
      if (images) q = q.where('image', 'in', images);
      await q.execute();
    },

    /** Sets fields of the instances' rows, making the rows that do not exist yet. */
    async putInstances(tx: Tx, machineId: number, instanceIds: number[], patch: Partial<Omit<SimInstanceRow, 'instance_id' | 'machine_id'>>): Promise<void> {
      for (const id of instanceIds) {
        await tx.insertInto('sim_instances')
          .values({ instance_id: id, machine_id: machineId, generation: null, boot: null, stopped: null, silent: 0, crash: 0, ...patch })
          .onConflict((oc) => oc.column('instance_id').doUpdateSet({ machine_id: machineId, ...patch })).execute();
      }
    },

    /**
     * Crashed containers of these instances start again: the agent takes each as one it stopped itself, so a desired
     * `running` starts it (reconcile-plan.ts).
     */
    async restartCrashed(tx: Tx, instanceIds: number[], crashExitCode: number): Promise<void> {
      if (!instanceIds.length) return;
      await tx.updateTable('sim_instances').set({ stopped: 1 }).where('instance_id', 'in', instanceIds).where('generation', 'is not', null)
        .where((eb) => eb.exists(eb.selectFrom('sim_containers as c').select('c.id').whereRef('c.instance_id', '=', 'sim_instances.instance_id')
          .where('c.status', '=', 'exited').where('c.exit_code', '=', crashExitCode)))
        .execute();
    },

    /** The agents' records of these instances (on their machines), in one statement. */
    async putRecords(tx: Tx, records: { machineId: number; instanceId: number; generation: number; boot: number; stopped: boolean }[]): Promise<void> {
      if (!records.length) return;
      await tx.insertInto('sim_instances')
        .values(records.map((r) => ({ instance_id: r.instanceId, machine_id: r.machineId, generation: r.generation, boot: r.boot, stopped: r.stopped ? 1 : 0, silent: 0, crash: 0 })))
        .onConflict((oc) => oc.column('instance_id').doUpdateSet((eb) => ({
          generation: eb.ref('excluded.generation'), boot: eb.ref('excluded.boot'), stopped: eb.ref('excluded.stopped'),
        })))
        .execute();
    },

    /** The gates of an instance's boots on its machine (emu-transitions/transitions-rules.ts), with when each opens. */
    async gatesOf(tx: Tx, machineId: number, instanceId: number): Promise<{ key: string; readyAt: number | null }[]> {
      const rows = await tx.selectFrom('sim_images').select(['image', 'ready_at']).where('machine_id', '=', machineId)
        .where('image', 'like', `${gatePrefix(instanceId)}%`).execute();
      return rows.map((r) => ({ key: r.image, readyAt: r.ready_at === null ? null : Number(r.ready_at) }));
    },

    /** When the machine's pull of an image (its key) is done: undefined when none is under way or done, null while it hangs. */
    async pullReadyAt(tx: Tx, machineId: number, key: string): Promise<number | null | undefined> {
      const row = await tx.selectFrom('sim_images').select('ready_at').where('machine_id', '=', machineId).where('image', '=', key).executeTakeFirst();
      return row === undefined ? undefined : row.ready_at === null ? null : Number(row.ready_at);
    },

    /** Gates and pulls (by key) of the machine done at `now` (an advance); hung pulls (fault `stall`) stay hung. */
    async finishNow(tx: Tx, machineId: number, keys: readonly string[], now: number): Promise<void> {
      if (keys.length === 0) return;
      await tx.updateTable('sim_images').set({ ready_at: now }).where('machine_id', '=', machineId).where('image', 'in', [...keys])
        .where('ready_at', 'is not', null).where('ready_at', '>', now).execute();
    },

    /** Whether the machine's agent has work due (at any time): a desired change not yet acted on, or a pull's end. */
    async hasDue(tx: Tx, machineId: number): Promise<boolean> {
      return (await tx.selectFrom('sim_due').select('machine_id').where('machine_id', '=', machineId).limit(1).execute()).length > 0;
    },

    /**
     * Machines with a boot waiting for its advance (a manual gate) get a pass at `now`: it starts the boots whose rule
     * is no longer manual (the rules changed). The machines, so that the caller makes sure of a step.
     */
    async recheckManualGates(tx: Tx, now: number): Promise<number[]> {
      const rows = await tx.selectFrom('sim_images').select('machine_id').distinct().where('ready_at', '>=', MANUAL_GATE_AT).execute();
      const ids = rows.map((r) => r.machine_id);
      if (ids.length) await tx.insertInto('sim_due').values(ids.map((machine_id) => ({ machine_id, due_at: now }))).execute();
      return ids;
    },

    async removeInstances(tx: Tx, instanceIds: number[]): Promise<void> {
      if (instanceIds.length) await tx.deleteFrom('sim_instances').where('instance_id', 'in', instanceIds).execute();
    },
  };
}

export type SimhostStore = ReturnType<typeof simhostStore>;

import { sql, type ExpressionBuilder, type RawBuilder, type Selectable } from 'kysely';
import type { Db, Tx } from '../platform/db/connect.js';
import type { Database } from '../platform/db/schema.js';
import { prepared, preparedByKeys } from '../platform/db/prepared.js';
import { instanceFingerprintParts, instanceWorkOn } from '../instances/instances-agent-contract.js';
import { membersAllowingSql } from '../teams/teams-contract.js';
import { liveVolumeOn, volumeFingerprintPart } from '../volumes/volumes-contract.js';
import { TEAM_SSH_CATEGORY } from './agent-server-desired.js';
import type { AgentLogRequestsTable, AgentMachinesTable } from './agent-server-tables.js';

export type AgentMachineRow = Selectable<AgentMachinesTable>;
export type AgentLogRequestRow = Selectable<AgentLogRequestsTable>;

/** Machines per fingerprint query (bound parameters stay far below SQLite's and PostgreSQL's limits). */
const FINGERPRINT_BATCH = 1000;

/** The agent tables (agent-server-tables.ts). */
export function agentStore(db: Db) {
  // Every agent request and heartbeat runs these (platform/db/prepared.ts): 10,000 machines report every 10 s.
  const selectByKeyHash = prepared(['key_hash'], (q: { key_hash: string }) => db.selectFrom('agent_machines').selectAll().where('key_hash', '=', q.key_hash));
  const selectByMachine = prepared(['machine_id'], (q: { machine_id: number }) => db.selectFrom('agent_machines').selectAll().where('machine_id', '=', q.machine_id));
  const updateMachine = preparedByKeys((q: Partial<AgentMachineRow> & { machine_id: number }) => {
    const { machine_id, ...patch } = q;
    return db.updateTable('agent_machines').set(patch).where('machine_id', '=', machine_id);
  });
  const selectOpenLogRequests = prepared(['machine_id', 'now'], (q: { machine_id: number; now: number }) =>
    db.selectFrom('agent_log_requests').selectAll().where('machine_id', '=', q.machine_id).where('answered_at', 'is', null)
      .where('expires_at', '>', q.now).orderBy('request_id'));
  // The heartbeat of an online machine with nothing on it (most of a fleet, most of the time), in one statement: its key
  // finds its row, and the row is touched only when the machine has no live instance and no unanswered log request,
  // command or snapshot (its desired state is then the empty one). The instances feature's tests go in the same
  // statement (instances-agent-contract.ts `instanceWorkOn`).
  const idle = (eb: ExpressionBuilder<Database, 'agent_machines'>) => {
    const work = instanceWorkOn(eb.ref('agent_machines.machine_id'));
    return eb.and([
      eb('agent_machines.offline', '=', 0),
      // Hardware held back while the machine had instances is applied by the full path once it has none.
      eb('agent_machines.hardware_pending', '=', 0),
      // A machine under a GPU fault: its healthy sample (recovery) is applied by the full path (agent-server-health.ts).
      eb('agent_machines.gpu_fault', 'is', null),
      eb.not(work.liveInstance),
      eb.not(eb.exists(eb.selectFrom('agent_log_requests').select('agent_log_requests.request_id').whereRef('agent_log_requests.machine_id', '=', 'agent_machines.machine_id').where('agent_log_requests.answered_at', 'is', null))),
      eb.not(work.openCommand),
      eb.not(work.openSnapshot),
      // A machine with a live volume has one in its desired state (issue 33).
      eb.not(liveVolumeOn(eb.ref('agent_machines.machine_id'))),
    ]);
  };
  const touchIdle = prepared(['key_hash', 'now', 'agent_version'], (q: { key_hash: string; now: number; agent_version: string }) =>
    db.updateTable('agent_machines').set({ last_report_at: q.now, agent_version: q.agent_version })
      .where('key_hash', '=', q.key_hash).where(idle)
      .returning(['machine_id', 'key_hash']));
  // The same with the heartbeat's GPU sample (issue 33): still one statement; only a healthy sample comes this way.
  const touchIdleGpu = prepared(['key_hash', 'now', 'agent_version', 'gpu_telemetry'], (q: { key_hash: string; now: number; agent_version: string; gpu_telemetry: string }) =>
    db.updateTable('agent_machines').set({ last_report_at: q.now, agent_version: q.agent_version, gpu_telemetry: q.gpu_telemetry, gpu_telemetry_at: q.now })
      .where('key_hash', '=', q.key_hash).where(idle)
      .returning(['machine_id', 'key_hash']));
  return {
    /**
     * Records a heartbeat of the machine with this key in one statement when it is online and idle (see touchIdle);
     * undefined when it is not (offline, busy, or no such key): the caller takes the full path.
     */
    async touchIfIdle(keyHash: string, now: number, agentVersion: string, tx: Tx = db, gpuTelemetry?: string): Promise<{ machine_id: number; key_hash: string | null } | undefined> {
      if (gpuTelemetry !== undefined) return (await touchIdleGpu(tx, { key_hash: keyHash, now, agent_version: agentVersion, gpu_telemetry: gpuTelemetry })).rows[0];
      return (await touchIdle(tx, { key_hash: keyHash, now, agent_version: agentVersion })).rows[0];
    },

    /**
     * touchIfIdle for many heartbeats in one statement (PostgreSQL: the keys as one array): the rows touched, by key
     * digest. The idle rows named are locked in machine order first, so two such statements never deadlock, and a
     * busy machine (its report on the full path holding its row) holds up no batch.
     */
    async touchManyIfIdle(beats: { keyHash: string; agentVersion: string; gpuTelemetry?: string }[], now: number, tx: Tx = db): Promise<Map<string, { machine_id: number; key_hash: string | null }>> {
      const byKey = new Map(beats.map((b) => [b.keyHash, b]));
      const keys = [...byKey.keys()].sort();
      const versions = keys.map((k) => byKey.get(k)!.agentVersion);
      // A heartbeat without a GPU sample keeps the machine's last one (null in the array).
      const samples = keys.map((k) => byKey.get(k)!.gpuTelemetry ?? null);
      const beat = sql<{ key_hash: string; agent_version: string; gpu_telemetry: string | null }>`(select * from unnest(${keys}::text[], ${versions}::text[], ${samples}::text[]) as u(key_hash, agent_version, gpu_telemetry))`;
      const rows = await tx
        .with('locked', (q) => q.selectFrom('agent_machines').select('machine_id').where(sql<boolean>`key_hash = any(${keys}::text[])`).where(idle).orderBy('machine_id').forUpdate())
        .updateTable('agent_machines')
        .from(beat.as('beat'))
        .set((eb) => ({
          last_report_at: now,
          agent_version: eb.ref('beat.agent_version'),
          gpu_telemetry: eb.fn.coalesce('beat.gpu_telemetry', 'agent_machines.gpu_telemetry'),
          gpu_telemetry_at: eb.case().when('beat.gpu_telemetry', 'is', null).then(eb.ref('agent_machines.gpu_telemetry_at')).else(now).end(),
        }))
        .where('agent_machines.machine_id', 'in', (eb) => eb.selectFrom('locked').select('locked.machine_id'))
        .whereRef('agent_machines.key_hash', '=', 'beat.key_hash').where(idle)
        .returning(['agent_machines.machine_id', 'agent_machines.key_hash']).execute();
      return new Map(rows.map((r) => [r.key_hash!, r]));
    },

    async byRegistration(userId: number, registrationId: string, tx: Tx = db): Promise<AgentMachineRow | undefined> {
      return tx.selectFrom('agent_machines').selectAll().where('user_id', '=', userId).where('registration_id', '=', registrationId).executeTakeFirst();
    },

    /**
     * A repeated registration's new key, unless the machine's key was revoked (it was deleted) meanwhile: the revoke
     * stands. False when it was.
     */
    async rekey(machineId: number, keyHash: string, agentVersion: string, tx: Tx): Promise<boolean> {
      const r = await tx.updateTable('agent_machines').set({ key_hash: keyHash, agent_version: agentVersion })
        .where('machine_id', '=', machineId).where('key_hash', 'is not', null).executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    },

    /**
     * A host's machines for the registration caps, in one statement: those not deleted (their key not revoked), and
     * those registered after `since` (deleted ones too) with the oldest of them.
     */
    async registrationCounts(userId: number, since: number, tx: Tx): Promise<{ live: number; recent: number; oldestRecent: number | null }> {
      const r = await tx.selectFrom('agent_machines')
        .select((eb) => [
          eb.fn.count<number>(eb.case().when('key_hash', 'is not', null).then(1).end()).as('live'),
          eb.fn.count<number>(eb.case().when('created_at', '>', since).then(1).end()).as('recent'),
          eb.fn.min<number | null>(eb.case().when('created_at', '>', since).then(eb.ref('created_at')).end()).as('oldest'),
        ])
        .where('user_id', '=', userId).executeTakeFirstOrThrow();
      return { live: Number(r.live), recent: Number(r.recent), oldestRecent: r.oldest === null ? null : Number(r.oldest) };
    },

    async byKeyHash(keyHash: string, tx: Tx = db): Promise<AgentMachineRow | undefined> {
      return (await selectByKeyHash(tx, { key_hash: keyHash })).rows[0];
    },

    async byMachine(machineId: number, tx: Tx = db): Promise<AgentMachineRow | undefined> {
      return (await selectByMachine(tx, { machine_id: machineId })).rows[0];
    },

    /** Removes the agent row of a machine whose registration id starts with `prefix` (the emulator's adopted ones). */
    async deleteRegisteredAs(machineId: number, prefix: string, tx: Tx = db): Promise<void> {
      await tx.deleteFrom('agent_machines').where('machine_id', '=', machineId).where('registration_id', 'like', `${prefix}%`).execute();
    },

    async insert(row: AgentMachineRow, tx: Tx): Promise<void> {
      await tx.insertInto('agent_machines').values(row).execute();
    },

    async update(machineId: number, patch: Partial<Omit<AgentMachineRow, 'machine_id'>>, tx: Tx = db): Promise<void> {
      await updateMachine(tx, { ...patch, machine_id: machineId });
    },

    /** Online machines (with a live key) whose last report, or registration, is at or before `cutoff`; `limit` at most. */
    async silentSince(cutoff: number, limit: number, tx: Tx = db): Promise<number[]> {
      const rows = await tx.selectFrom('agent_machines').select('machine_id').where('offline', '=', 0).where('key_hash', 'is not', null)
        .where((eb) => eb(eb.fn.coalesce('last_report_at', 'created_at'), '<=', cutoff)).orderBy('machine_id').limit(limit).execute();
      return rows.map((r) => r.machine_id);
    },

    /** When the online machine that reported longest ago last reported (or registered); null when none is online. */
    async oldestOnlineReport(tx: Tx = db): Promise<number | null> {
      const r = await tx.selectFrom('agent_machines').select((eb) => eb.fn.min(eb.fn.coalesce('last_report_at', 'created_at')).as('t'))
        .where('offline', '=', 0).where('key_hash', 'is not', null).executeTakeFirst();
      return r?.t === null || r?.t === undefined ? null : Number(r.t);
    },

    async insertLogRequest(row: AgentLogRequestRow, tx: Tx = db): Promise<void> {
      await tx.insertInto('agent_log_requests').values(row).execute();
    },

    /** The machine's log requests its agent has yet to answer (not expired). */
    async openLogRequests(machineId: number, now: number, tx: Tx = db): Promise<AgentLogRequestRow[]> {
      return (await selectOpenLogRequests(tx, { machine_id: machineId, now })).rows;
    },

    async logRequest(requestId: string, tx: Tx = db): Promise<AgentLogRequestRow | undefined> {
      return tx.selectFrom('agent_log_requests').selectAll().where('request_id', '=', requestId).executeTakeFirst();
    },

    async logRequestOf(logRequestId: number, tx: Tx = db): Promise<AgentLogRequestRow | undefined> {
      return tx.selectFrom('agent_log_requests').selectAll().where('log_request_id', '=', logRequestId).executeTakeFirst();
    },

    async answerLogRequest(requestId: string, a: { text: string; error: string | null; answered_at: number }, tx: Tx = db): Promise<void> {
      await tx.updateTable('agent_log_requests').set(a).where('request_id', '=', requestId).where('answered_at', 'is', null).execute();
    },

    /**
     * A cheap digest of what each machine's desired state is built from (seven queries for any number of machines):
     * its live instances (which ones; each state change bumps `state_version`, each recycle or update `generation`), their SSH
     * keys, their renters' account keys, the account keys of the members let into its team instances (whose role
     * allows TEAM_SSH_CATEGORY), its open log requests, and its `execute` and snapshot requests (a new one, or
     * one answered). A held long-poll rebuilds the desired state only when its machine's digest changes
     * (agent-server-watch.ts).
     */
    async fingerprints(machineIds: number[], tx: Tx = db): Promise<Map<number, string>> {
      const parts = new Map<number, number[]>();
      for (let i = 0; i < machineIds.length; i += FINGERPRINT_BATCH) {
        const ids = machineIds.slice(i, i + FINGERPRINT_BATCH);
        for (const id of ids) parts.set(id, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        const list = sql.join(ids);
        const num = (e: RawBuilder<unknown>) => sql`cast(${e} as double precision)`;
        // One statement, one round trip (a renewed long-poll reads it): each part's aggregates, tagged. All but the log
        // requests are the instances feature's parts (instances-agent-contract.ts `instanceFingerprintParts`).
        const of = instanceFingerprintParts(list, num, membersAllowingSql(TEAM_SSH_CATEGORY));
        const { rows } = await sql<{ machine_id: number; k: string; a: number; b: number; c: number }>`
          ${of.instances}
          union all
          ${of.instanceIds}
          union all
          ${of.sshKeys}
          union all
          select machine_id, 'l', ${num(sql`count(*)`)}, ${num(sql`0`)}, ${num(sql`0`)}
            from agent_log_requests where machine_id in (${list}) and answered_at is null group by machine_id
          union all
          ${of.accountKeys}
          union all
          ${of.teamKeys}
          union all
          ${of.commands}
          union all
          ${of.snapshots}
          union all
          ${volumeFingerprintPart(list, num)}`.execute(tx);
        for (const r of rows) {
          const p = parts.get(Number(r.machine_id));
          if (!p) continue;
          const [a, b, c] = [Number(r.a), Number(r.b), Number(r.c)];
          // The instances feature's execute and snapshot requests count by the newest one and how many were answered.
          if (r.k === 'i') Object.assign(p, { 0: a, 1: b, 8: c });
          else if (r.k === 'k') Object.assign(p, { 2: a, 3: b });
          else if (r.k === 'l') p[4] = a;
          else if (r.k === 'a') Object.assign(p, { 5: a, 6: b, 7: c });
          else if (r.k === 'c') p[9] = a + b;
          else if (r.k === 's') p[10] = a + b;
          else if (r.k === 't') Object.assign(p, { 11: a, 12: b, 13: c });
          else if (r.k === 'j') Object.assign(p, { 14: a, 15: b, 16: c });
          else if (r.k === 'v') Object.assign(p, { 17: a, 18: b, 19: c });
        }
      }
      return new Map([...parts].map(([id, p]) => [id, p.join(':')]));
    },
  };
}

export type AgentStore = ReturnType<typeof agentStore>;

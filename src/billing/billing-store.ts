import { sql, type InsertQueryBuilder, type InsertResult, type Selectable } from 'kysely';
import type { Database } from '../platform/db/schema.js';
import { usersContract } from '../users/users-contract.js';
import type { DialectName, Tx } from '../platform/db/connect.js';
import { kvClaimStatement } from '../platform/db/kv.js';
import { prepared, preparedByKeys, preparedRows } from '../platform/db/prepared.js';
import { rowsTable } from '../platform/db/values.js';
import type { BillingContractsTable, BillingMetersTable } from './billing-tables.js';
import type { DayCharge } from './billing-accrual.js';

export type ContractRow = Selectable<BillingContractsTable>;
export type MeterRow = Selectable<BillingMetersTable>;

export interface NewContract {
  source: string;
  type: string;
  user_id: number;
  team_id: number | null;
  description: string;
  metadata: string;
  start_at: number;
}

/** A contract about to start a meter of a kind, with what decides how (billing-service.ts `startMeters`). */
export type ContractToStart = ContractRow & {
  /** 1 when the contract has a meter of that kind already (a restart: a new segment of it). */
  has_meter: number;
  /** 1 when the contract has an open deposit (its meters may start funded). */
  has_deposit: number;
};

export interface Ledger {
  credit: number;
  pending: number;
  rate: number;
}

interface LedgerRowRaw {
  credit: number;
  pending: number | null;
  rate: number | null;
}

/** A change to a user's running totals (billing_rates): what one meter adds (negative: removes) at second `at`. */
export interface RatesDelta {
  rate: number;
  /** rate × (at − seg_start) of a segment that starts or stops counting. */
  accrued: number;
  charged: number;
}

/**
 * Credit and burn rate of one user from their running totals (billing_rates), one row read: `low` is a lower bound
 * of the balance at `at` (the accrual is rounded up), never above the exact one while no meter is settled past `at`.
 */
function quickLedgerQuery(userId: number, at: number) {
  const t = sql`CAST(${at} AS BIGINT)`;
  return sql<{ low: number; rate: number | null }>`
    SELECT u.credit_micro + COALESCE(r.charged_micro, 0)
             - COALESCE((r.accrued + r.rate_micro_per_hour * (${t} - r.ref_at) + 3599) / 3600, 0) AS low,
           r.rate_micro_per_hour AS rate
    FROM users u LEFT JOIN billing_rates r ON r.user_id = u.id
    WHERE u.id = ${userId}`;
}

/**
 * Credit, pending accrual and burn rate of one user (meters a deposit pays are not the credit's: billing-deposits.ts).
 * better-sqlite3 binds JS numbers as REAL: `at` is cast, so that
 * the division truncates as integers on both dialects (as `settleSameDay` does). No running meter: NULL sums.
 */
function ledgerQuery(userId: number, at: number) {
  const t = sql`CAST(${at} AS BIGINT)`;
  return sql<LedgerRowRaw>`
    SELECT u.credit_micro AS credit,
           SUM(CASE WHEN m.settled_until < ${t} THEN (m.rate_micro_per_hour * (${t} - m.seg_start)) / 3600 - m.seg_charged_micro ELSE 0 END) AS pending,
           SUM(m.rate_micro_per_hour) AS rate
    FROM users u LEFT JOIN billing_meters m ON m.user_id = u.id AND m.running = 1 AND m.funded = 0
    WHERE u.id = ${userId}
    GROUP BY u.id, u.credit_micro`;
}

/** The ledger's SQL. Every function takes the caller's transaction; rows being settled are locked on PostgreSQL. */
export function billingStore(db: Tx, dialect: DialectName) {
  const pg = dialect === 'postgres';
  // `balance` runs the ledger on every users/current, the quick ledger on every rent (platform/db/prepared.ts).
  const ledger = prepared(['userId', 'at'], (q: { userId: number; at: number }) => ({ compile: () => ledgerQuery(q.userId, q.at).compile(db) }));
  const quick = prepared(['userId', 'at'], (q: { userId: number; at: number }) => ({ compile: () => quickLedgerQuery(q.userId, q.at).compile(db) }));
  // The statements of starting and stopping a meter, on every rent, boot and stop (platform/db/prepared.ts).
  const insertContract = preparedByKeys((c: NewContract & { end_at: number; tree_key: number; live: number }) =>
    db.insertInto('billing_contracts').values(c).onConflict((oc) => oc.column('source').doNothing()).returningAll(),
  );
  const setTreeKey = prepared(['id'], (q: { id: number }) => db.updateTable('billing_contracts').set({ tree_key: q.id }).where('id', '=', q.id));
  const touchContractOf = prepared(['id', 'at'], (q: { id: number; at: number }) =>
    db
      .updateTable('billing_contracts')
      .set((eb) => ({
        end_at: sql<number>`CASE WHEN ${eb.ref('end_at')} < ${q.at} THEN ${q.at} ELSE ${eb.ref('end_at')} END`,
        // The 0/1 flag summed over the contract's meters, not `COUNT(*) … AND running = 1`: with that filter SQLite
        // reads through the index on `running`, every running meter of every user, on each rent and stop.
        live: eb
          .selectFrom('billing_meters')
          .select(sql<number>`COALESCE(SUM(billing_meters.running), 0)`.as('n'))
          .where('billing_meters.contract_id', '=', q.id),
      }))
      .where('id', '=', q.id),
  );
  // PostgreSQL: the id is drawn first, so that the contract is written with its tree key (its own id) in one statement
  // (SQLite inserts, then sets it).
  const newContractKeys = ['source', 'type', 'user_id', 'team_id', 'description', 'metadata', 'start_at', 'end_at', 'live'] as const;
  const insertContractWithKey = prepared([...newContractKeys], (c: NewContract & { end_at: number; live: number }) =>
    db.insertInto('billing_contracts').columns(['id', 'tree_key', ...newContractKeys]).expression(
      db.selectFrom(sql<{ id: number }>`(SELECT nextval(pg_get_serial_sequence('billing_contracts', 'id')) AS id)`.as('n'))
        .select([sql<number>`n.id`.as('id'), sql<number>`n.id`.as('tree_key'), ...newContractKeys.map((k) => sql`${c[k]}`.as(k))]),
    ).onConflict((oc) => oc.column('source').doNothing()).returningAll(),
  );
  const bySource = (q: { source: string }) => db.selectFrom('billing_contracts').selectAll().where('source', '=', q.source);
  const contractBySource = prepared(['source'], (q: { source: string }) => (pg ? bySource(q).forUpdate() : bySource(q)));
  const metersOf = (q: { id: number }) => db.selectFrom('billing_meters').selectAll().where('contract_id', '=', q.id).orderBy('id');
  const metersOfContract = prepared(['id'], (q: { id: number }) => (pg ? metersOf(q).forUpdate() : metersOf(q)));
  const insertMeterRows = preparedRows(db, (tx, ms: readonly Omit<MeterRow, 'id'>[]) => tx.insertInto('billing_meters').values([...ms]));
  const updateMeterRow = preparedByKeys(({ $id, ...set }: Partial<Omit<MeterRow, 'id'>> & { $id: number }) =>
    db.updateTable('billing_meters').set(set).where('id', '=', $id),
  );
  const ratesRow = (q: { user_id: number; at: number } & RatesDelta) =>
    ({ user_id: q.user_id, rate_micro_per_hour: q.rate, accrued: q.accrued, ref_at: sql<number>`CAST(${q.at} AS BIGINT)`, charged_micro: q.charged });
  const addToRates = (q: InsertQueryBuilder<Database, 'billing_rates', InsertResult>) =>
    q.onConflict((oc) =>
      oc.column('user_id').doUpdateSet({
        accrued: sql<number>`billing_rates.accrued + billing_rates.rate_micro_per_hour * (excluded.ref_at - billing_rates.ref_at) + excluded.accrued`,
        ref_at: sql<number>`excluded.ref_at`,
        rate_micro_per_hour: sql<number>`billing_rates.rate_micro_per_hour + excluded.rate_micro_per_hour`,
        charged_micro: sql<number>`billing_rates.charged_micro + excluded.charged_micro`,
      }),
    );
  // `moveRatesMany` (and `moveRates`, of one user: every meter start and stop).
  const upsertRates = preparedRows(db, (tx, rows: readonly ({ user_id: number; at: number } & RatesDelta)[]) =>
    addToRates(tx.insertInto('billing_rates').values(rows.map(ratesRow))),
  );
  // `upsertRates`, returning the quick ledger at second `now` from the totals it wrote: the statement that starts a
  // meter is also its credit check's read (quickLedgerQuery's arithmetic, on the row as changed).
  type RatesLedgerKeys = { user_id: number; at: number; now: number } & RatesDelta;
  const ratesLedgerKeys = ['user_id', 'rate', 'accrued', 'at', 'charged', 'now'] as const;
  const ratesLedger = (q: RatesLedgerKeys) =>
    addToRates(db.insertInto('billing_rates').values(ratesRow(q))).returning([
      sql<number>`(SELECT u.credit_micro FROM users u WHERE u.id = billing_rates.user_id) + billing_rates.charged_micro
        - (billing_rates.accrued + billing_rates.rate_micro_per_hour * (CAST(${q.now} AS BIGINT) - billing_rates.ref_at) + 3599) / 3600`.as('low'),
      sql<number>`billing_rates.rate_micro_per_hour`.as('rate'),
    ]);
  const upsertRatesLedger = prepared([...ratesLedgerKeys], ratesLedger);
  // PostgreSQL: and a claim of a kv key (`KvState.claim`), in the same statement (a data-modifying CTE): `claimed`.
  const upsertRatesLedgerClaiming = prepared([...ratesLedgerKeys, 'claim_key', 'claim_value'], (q: RatesLedgerKeys & { claim_key: string; claim_value: string }) => ({
    compile: () => sql<{ low: number | null; rate: number; claimed: number }>`
      WITH claim AS (${kvClaimStatement(db, q.claim_key, q.claim_value)})
      ${ratesLedger(q).returning(sql<number>`(SELECT count(*) FROM claim)`.as('claimed'))}`.compile(db),
  }));

  return {
    dialect,

    /** Locks the contract's row (PostgreSQL; SQLite transactions are serial already). */
    async lockContract(id: number, tx: Tx = db): Promise<void> {
      if (pg) await tx.selectFrom('billing_contracts').select('id').where('id', '=', id).forUpdate().execute();
    },

    async contractBySource(source: string, tx: Tx = db): Promise<ContractRow | undefined> {
      return (await contractBySource(tx, { source })).rows[0];
    },

    /** The id of the contract of `source`, read without a lock (`show deposit`). */
    async contractIdBySource(source: string, tx: Tx = db): Promise<number | undefined> {
      return (await tx.selectFrom('billing_contracts').select('id').where('source', '=', source).executeTakeFirst())?.id;
    },

    /** The lowest tree key among an endpoint's contracts, which every contract of the endpoint takes (the tree format). */
    async firstTreeKeyOf(endpointSource: string, tx: Tx = db): Promise<number | null> {
      const row = await tx
        .selectFrom('billing_contracts')
        .select((eb) => eb.fn.min<number>('tree_key').as('k'))
        .where('endpoint_source', '=', endpointSource)
        .executeTakeFirst();
      return row?.k ?? null;
    },

    /**
     * Inserts the contract unless it exists (two processes may race to open it), and returns it locked; `created`
     * when this call inserted it. `live`: the running meters it will have once the caller's transaction ends.
     */
    async openContract(c: NewContract, tx: Tx = db, live = 0): Promise<{ contract: ContractRow; created: boolean }> {
      // The tree format pages by tree_key; a contract outside serverless is its own key.
      let inserted: ContractRow | undefined;
      if (pg) inserted = (await insertContractWithKey(tx, { ...c, end_at: c.start_at, live })).rows[0];
      else {
        inserted = (await insertContract(tx, { ...c, end_at: c.start_at, tree_key: 0, live })).rows[0];
        if (inserted) {
          await setTreeKey(tx, { id: inserted.id });
          inserted = { ...inserted, tree_key: inserted.id };
        }
      }
      if (inserted) return { contract: inserted, created: true };
      const contract = (await contractBySource(tx, { source: c.source })).rows[0];
      if (!contract) throw new Error(`contract ${c.source} vanished`);
      return { contract, created: false };
    },

    /**
     * The contracts of these sources (those that exist), locked in id order, each with whether it has a meter of
     * `kind` and an open deposit: one statement. Their meters and deposits are written only under the contract's lock.
     */
    async contractsToStart(sources: readonly string[], kind: string, tx: Tx = db): Promise<ContractToStart[]> {
      if (sources.length === 0) return [];
      const q = tx
        .selectFrom('billing_contracts as c')
        .selectAll('c')
        .select((eb) => [
          sql<number>`CASE WHEN ${eb.exists(eb.selectFrom('billing_meters as m').select('m.id').whereRef('m.contract_id', '=', 'c.id').where('m.kind', '=', kind))} THEN 1 ELSE 0 END`.as('has_meter'),
          sql<number>`CASE WHEN ${eb.exists(eb.selectFrom('billing_deposits as d').select('d.id').whereRef('d.contract_id', '=', 'c.id').where('d.closed_at', 'is', null))} THEN 1 ELSE 0 END`.as('has_deposit'),
        ])
        .where('c.source', 'in', sources)
        .orderBy('c.id');
      const rows = await (pg ? q.forUpdate(['c']) : q).execute();
      return rows.map((r) => ({ ...r, has_meter: Number(r.has_meter), has_deposit: Number(r.has_deposit) }));
    },

    /**
     * Contracts that started meters at `at`: their description and metadata set, and each touched as
     * `touchContract` does (end_at extended, running meters recounted). One statement.
     */
    async startedContracts(rows: readonly { id: number; description: string; metadata: string }[], at: number, tx: Tx = db): Promise<void> {
      if (rows.length === 0) return;
      const v = rowsTable(rows, { id: 'bigint', description: 'text', metadata: 'text' });
      await sql`
        UPDATE billing_contracts SET description = v.description, metadata = v.metadata,
          end_at = CASE WHEN billing_contracts.end_at < ${at} THEN ${at} ELSE billing_contracts.end_at END,
          live = (SELECT COALESCE(SUM(billing_meters.running), 0) FROM billing_meters WHERE billing_meters.contract_id = billing_contracts.id)
        FROM ${v} AS v WHERE billing_contracts.id = v.id`.execute(tx);
    },

    async updateContract(id: number, set: Partial<Omit<ContractRow, 'id'>>, tx: Tx = db): Promise<void> {
      await tx.updateTable('billing_contracts').set(set).where('id', '=', id).execute();
    },

    /** Extends the contract's charged period to `at` and recounts its running meters. */
    async touchContract(id: number, at: number, tx: Tx = db): Promise<void> {
      await touchContractOf(tx, { id, at });
    },

    async meters(contractId: number, tx: Tx = db): Promise<MeterRow[]> {
      return (await metersOfContract(tx, { id: contractId })).rows;
    },

    async runningMetersOfUser(userId: number, tx: Tx = db, lock = false): Promise<MeterRow[]> {
      let q = tx.selectFrom('billing_meters').selectAll().where('user_id', '=', userId).where('running', '=', 1).orderBy('id');
      if (pg && lock) q = q.forUpdate();
      return q.execute();
    },

    /** Meters in one statement (a rent's one meter compiled once). */
    async insertMeters(ms: readonly Omit<MeterRow, 'id'>[], tx: Tx = db): Promise<void> {
      await insertMeterRows(tx, ms);
    },

    async updateMeter(id: number, set: Partial<Omit<MeterRow, 'id'>>, tx: Tx = db): Promise<void> {
      await updateMeterRow(tx, { ...set, $id: id });
    },

    /** Stops meters, each settled to its own second (`seg_charged_micro`, `settled_until`), in one statement. */
    async stopMetersSettled(rows: readonly Pick<MeterRow, 'id' | 'seg_charged_micro' | 'settled_until'>[], tx: Tx = db): Promise<void> {
      if (rows.length <= 1) {
        for (const { id, ...settled } of rows) await updateMeterRow(tx, { ...settled, running: 0, $id: id });
        return;
      }
      const v = rowsTable(rows, { id: 'integer', seg_charged_micro: 'bigint', settled_until: 'bigint' });
      await sql`
        UPDATE billing_meters SET running = 0, seg_charged_micro = v.seg_charged_micro, settled_until = v.settled_until
        FROM ${v} AS v WHERE billing_meters.id = v.id`.execute(tx);
    },

    /** Adds to the item's row of the day (created on first charge). */
    async addCharge(contractId: number, kind: string, c: DayCharge, tx: Tx = db): Promise<void> {
      await this.addCharges([{ contractId, kind, charge: c }], tx);
    },

    /** `addCharge` for several items and days in one statement; no two of them for the same item and day. */
    async addCharges(charges: { contractId: number; kind: string; charge: DayCharge }[], tx: Tx = db): Promise<void> {
      if (!charges.length) return;
      await tx
        .insertInto('billing_charges')
        .values(charges.map(({ contractId, kind, charge: c }) => ({ contract_id: contractId, kind, day: c.day, amount_micro: c.amount, start_at: c.start, end_at: c.end })))
        .onConflict((oc) =>
          oc.columns(['contract_id', 'kind', 'day']).doUpdateSet((eb) => ({
            amount_micro: eb(eb.ref('billing_charges.amount_micro'), '+', eb.ref('excluded.amount_micro')),
            start_at: sql<number>`CASE WHEN billing_charges.start_at < excluded.start_at THEN billing_charges.start_at ELSE excluded.start_at END`,
            end_at: sql<number>`CASE WHEN billing_charges.end_at > excluded.end_at THEN billing_charges.end_at ELSE excluded.end_at END`,
          })),
        )
        .execute();
    },

    /** Moves the balance by `deltaMicro` (negative debits); returns the new balance. */
    async adjustCredit(userId: number, deltaMicro: number, tx: Tx = db): Promise<number | undefined> {
      return usersContract.adjustCredit(tx, userId, deltaMicro);
    },

    /**
     * The user's stored credit and, over their running meters, the accrual not yet settled at whole second `at` and
     * the summed hourly rate; undefined when there is no such user.
     */
    async ledgerOf(userId: number, at: number, tx: Tx = db): Promise<Ledger | undefined> {
      const row = (await ledger(tx, { userId, at })).rows[0];
      if (!row) return undefined;
      return { credit: Number(row.credit), pending: Number(row.pending ?? 0), rate: Number(row.rate ?? 0) };
    },

    /** Balance lower bound and burn rate from the running totals; undefined when there is no such user. */
    async quickLedgerOf(userId: number, at: number, tx: Tx = db): Promise<{ low: number; rate: number } | undefined> {
      const row = (await quick(tx, { userId, at })).rows[0];
      if (!row) return undefined;
      return { low: Math.floor(Number(row.low)), rate: Number(row.rate ?? 0) };
    },

    /** Adds a meter's change to its user's running totals, first moving `accrued` on to second `at`. */
    async moveRates(userId: number, at: number, d: RatesDelta, tx: Tx = db): Promise<void> {
      await upsertRates(tx, [{ user_id: userId, at, rate: d.rate, accrued: d.accrued, charged: d.charged }]);
    },

    /**
     * `moveRates`, then `quickLedgerOf(userId, now)`, in one statement; undefined when there is no such user (its
     * totals are written all the same, as `moveRates` writes them).
     */
    async moveRatesReadingLedger(
      userId: number,
      at: number,
      d: RatesDelta,
      now: number,
      tx: Tx = db,
      /** Also claims this kv key on PostgreSQL (`claimed`: whether it did); SQLite leaves it to the caller (undefined). */
      claim?: { key: string; value: string },
    ): Promise<{ quick: { low: number; rate: number } | undefined; claimed: boolean | undefined }> {
      const q = { user_id: userId, at, ...d, now };
      const row = (claim && pg
        ? (await upsertRatesLedgerClaiming(tx, { ...q, claim_key: claim.key, claim_value: claim.value })).rows[0]
        : (await upsertRatesLedger(tx, q)).rows[0]) as { low: number | null; rate: number; claimed?: number } | undefined;
      const claimed = claim && pg ? Number(row?.claimed ?? 0) > 0 : undefined;
      if (!row || row.low === null) return { quick: undefined, claimed };
      return { quick: { low: Math.floor(Number(row.low)), rate: Number(row.rate ?? 0) }, claimed };
    },

    /** `moveRates` for several users (each once) at one second, in one statement. */
    async moveRatesMany(at: number, deltas: readonly ({ userId: number } & RatesDelta)[], tx: Tx = db): Promise<void> {
      await upsertRates(tx, deltas.map((d) => ({ user_id: d.userId, at, rate: d.rate, accrued: d.accrued, charged: d.charged })));
    },

    /** The stored running totals of a user (tests compare them with the meters). */
    async ratesOf(userId: number, tx: Tx = db) {
      return tx.selectFrom('billing_rates').selectAll().where('user_id', '=', userId).executeTakeFirst();
    },

    async creditOf(userId: number, tx: Tx = db): Promise<number | undefined> {
      return usersContract.creditOf(tx, userId);
    },

    /**
     * Locks (PostgreSQL) the contracts of the running meters that `where` selects, in id order. Every path that
     * settles takes locks in the same order, contract then meter then user, so two settlements never deadlock.
     */
    async lockContractsOf(where: { userId?: number; settledBefore?: number }, tx: Tx = db): Promise<void> {
      if (!pg) return;
      let sub = tx.selectFrom('billing_meters').select('contract_id').where('running', '=', 1);
      if (where.userId !== undefined) sub = sub.where('user_id', '=', where.userId);
      if (where.settledBefore !== undefined) sub = sub.where('settled_until', '<', where.settledBefore);
      await tx.selectFrom('billing_contracts').select('id').where('id', 'in', sub).orderBy('id').forUpdate().execute();
    },

    /** Running meters whose last settlement lies before `since` (they span a day boundary: settled one by one). */
    async laggingMeters(since: number, until: number, tx: Tx = db): Promise<MeterRow[]> {
      let q = tx
        .selectFrom('billing_meters')
        .selectAll()
        .where('running', '=', 1)
        .where('settled_until', '<', since)
        .where('settled_until', '<', until)
        .orderBy('id');
      if (pg) q = q.forUpdate();
      return q.execute();
    },

    /**
     * Settles, in bulk, every running meter last settled within [dayStart, until): all the seconds involved lie in
     * one UTC day, so one charge row per item takes them. Three statements whatever the number of meters.
     */
    async settleSameDay(dayStart: number, until: number, tx: Tx = db): Promise<void> {
      // better-sqlite3 binds JS numbers as REAL: cast, so that the division truncates as integers on both dialects.
      const day = sql`CAST(${dayStart} AS BIGINT)`;
      const to = sql`CAST(${until} AS BIGINT)`;
      const due = sql`running = 1 AND settled_until >= ${day} AND settled_until < ${to}`;
      const newCum = sql`(rate_micro_per_hour * (${to} - seg_start)) / 3600`;
      if (pg) await sql`SELECT id FROM billing_meters WHERE ${due} FOR UPDATE`.execute(tx);
      await sql`
        INSERT INTO billing_charges (contract_id, kind, day, amount_micro, start_at, end_at)
        SELECT contract_id, kind, ${day}, ${newCum} - seg_charged_micro, settled_until, ${to}
        FROM billing_meters WHERE ${due}
        ON CONFLICT (contract_id, kind, day) DO UPDATE SET
          amount_micro = billing_charges.amount_micro + excluded.amount_micro,
          end_at = excluded.end_at`.execute(tx);
      // One grouped pass over the due meters (a correlated sum per user would rescan them for every user); what is
      // debited from the credit is added to the running totals' charged sum, so the balance they bound is unchanged.
      // Meters a deposit pays are debited from their deposit instead (billing-deposits.ts), and are not in the totals.
      const perUser = sql`(SELECT user_id, SUM(${newCum} - seg_charged_micro) AS total FROM billing_meters WHERE ${due} AND funded = 0 GROUP BY user_id)`;
      const perDeposit = sql`(SELECT contract_id, SUM(${newCum} - seg_charged_micro) AS total FROM billing_meters WHERE ${due} AND funded = 1 GROUP BY contract_id)`;
      await sql`
        UPDATE users SET credit_micro = users.credit_micro - s.total
        FROM ${perUser} AS s
        WHERE users.id = s.user_id`.execute(tx);
      await sql`
        UPDATE billing_rates SET charged_micro = billing_rates.charged_micro + s.total
        FROM ${perUser} AS s
        WHERE billing_rates.user_id = s.user_id`.execute(tx);
      await sql`
        UPDATE billing_deposits SET remaining_micro = billing_deposits.remaining_micro - s.total
        FROM ${perDeposit} AS s
        WHERE billing_deposits.contract_id = s.contract_id`.execute(tx);
      // Contracts keep their end_at: a live one matches every range anyway, and stopping sets it.
      await sql`UPDATE billing_meters SET seg_charged_micro = ${newCum}, settled_until = ${to} WHERE ${due}`.execute(tx);
    },

    async anyRunning(tx: Tx = db): Promise<boolean> {
      const row = await tx.selectFrom('billing_meters').select('id').where('running', '=', 1).limit(1).executeTakeFirst();
      return row !== undefined;
    },
  };
}

export type BillingStore = ReturnType<typeof billingStore>;

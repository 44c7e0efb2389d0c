import { sql, type ExpressionBuilder, type SelectQueryBuilder } from 'kysely';
import type { DialectName, Tx } from '../platform/db/connect.js';
import type { Database } from '../platform/db/schema.js';
import type { Scope } from '../platform/auth.js';
import type { ContractRow, MeterRow } from './billing-store.js';

/** What a charges page selects: whole seconds, inclusive, already widened to whole UTC days. */
export interface ChargesFilter {
  scope: Scope;
  from: number;
  to: number;
  /** The current second: a live contract reaches it. */
  now: number;
  types: string[] | null;
  /** `id` for the table format, `tree_key` for the tree format. */
  key: 'id' | 'tree_key';
  desc: boolean;
  /** Keyset position: the last key of the previous page. */
  after: number | null;
  limit: number;
}

export interface ItemSum {
  contract_id: number;
  kind: string;
  amount: number;
  start_at: number;
  end_at: number;
}

/** What a running meter has charged so far: what accrual needs to add what it accrued since (billing-accrual.ts). */
export type RunningSegment = Pick<MeterRow, 'contract_id' | 'kind' | 'rate_micro_per_hour' | 'seg_start' | 'settled_until' | 'seg_charged_micro'>;

/** One page of the charges listing as one statement read it (`page`). */
export interface ChargesPage {
  contracts: ContractRow[];
  more: boolean;
  total: number;
  /** Per contract of the page and kind: what the days of the range charged. */
  sums: ItemSum[];
  /** The page's running meters. */
  running: RunningSegment[];
}

type ContractsQuery = SelectQueryBuilder<Database, 'billing_contracts', object>;

/** A JSON array column: PostgreSQL's pg parses it; better-sqlite3 gives its text. Null when no row (PostgreSQL). */
const jsonRows = <T>(v: unknown): T[] => (v === null || v === undefined ? [] : typeof v === 'string' ? (JSON.parse(v) as T[]) : (v as T[]));

/**
 * The read side of the ledger: contracts of a scope that overlap a range, paged by a fixed key. A page is one
 * statement (one snapshot): the contracts, the count of all that match, and per contract what its days charged and
 * what its running meters stand at. Four statements read them before, each round trip a cost on PostgreSQL.
 */
export function chargesStore(db: Tx, dialect: DialectName) {
  const agg = dialect === 'postgres' ? sql.raw('json_agg') : sql.raw('json_group_array');
  const row = dialect === 'postgres' ? sql.raw('json_build_array') : sql.raw('json_array');
  function matching(f: ChargesFilter, tx: Tx): ContractsQuery {
    let q = tx.selectFrom('billing_contracts') as unknown as ContractsQuery;
    // A team context sees every contract of the team, whoever of its members opened it; otherwise the user's own.
    q =
      f.scope.teamId === null
        ? q.where('billing_contracts.user_id', '=', f.scope.userId).where('team_id', 'is', null)
        : q.where('team_id', '=', f.scope.teamId);
    q = q.where('start_at', '<=', f.to);
    q = q.where((eb: ExpressionBuilder<Database, 'billing_contracts'>) =>
      f.now >= f.from ? eb.or([eb('end_at', '>=', f.from), eb('live', '>', 0)]) : eb('end_at', '>=', f.from),
    );
    if (f.types) q = q.where('type', 'in', f.types);
    return q;
  }

  /** The keys of one page, as a subquery (no long parameter lists: the page's rows are joined to it). */
  function pageKeys(f: ChargesFilter, tx: Tx) {
    let q = matching(f, tx);
    if (f.after !== null) q = q.where(f.key, f.desc ? '<' : '>', f.after);
    const keyed = f.key === 'id' ? q.select('id as k') : q.select('tree_key as k').groupBy('tree_key');
    // One key more than the page: its presence says another page follows.
    return keyed.orderBy(f.key, f.desc ? 'desc' : 'asc').limit(f.limit + 1);
  }

  /** The contracts of the page (for the tree format: every matching contract of the page's tree keys). */
  function pageContracts(f: ChargesFilter, tx: Tx) {
    const keys = pageKeys(f, tx);
    return f.key === 'id'
      ? tx.selectFrom('billing_contracts').select('id').where('id', 'in', keys as any)
      : matching(f, tx).select('id').where('tree_key', 'in', keys as any);
  }

  /** The number of keys matching (a scalar subquery of the page, or alone when the page is empty). */
  const countOf = (f: ChargesFilter, tx: Tx) =>
    matching(f, tx).select(f.key === 'id' ? sql<number>`count(*)`.as('n') : sql<number>`count(DISTINCT tree_key)`.as('n'));

  return {
    /** The page's contracts, whether another page follows, the number of keys matching, and what they charged. */
    async page(f: ChargesFilter, fromDay: number, toDay: number, tx: Tx = db): Promise<ChargesPage> {
      const rows = await tx
        .selectFrom('billing_contracts as c')
        .selectAll('c')
        .select([
          countOf(f, tx).as('page_total'),
          sql<unknown>`(SELECT ${agg}(${row}(s.kind, s.amount, s.start_at, s.end_at)) FROM (
              SELECT kind, sum(amount_micro) AS amount, min(start_at) AS start_at, max(end_at) AS end_at FROM billing_charges
              WHERE contract_id = c.id AND day >= ${fromDay} AND day <= ${toDay} GROUP BY kind) s)`.as('page_sums'),
          // `running` filters the aggregate, not the rows: as a condition it let PostgreSQL's planner AND the index on
          // `running` (every running meter of the fleet) with the contract's, where the contract's two or three meters
          // were all there was to read (auto_explain under bench pg-mixed: ~1,000 index entries per contract).
          sql<unknown>`(SELECT ${agg}(${row}(m.kind, m.rate_micro_per_hour, m.seg_start, m.settled_until, m.seg_charged_micro))
              FILTER (WHERE m.running = 1) FROM billing_meters m WHERE m.contract_id = c.id)`.as('page_running'),
        ])
        .where('c.id', 'in', pageContracts(f, tx) as any)
        .orderBy(`c.${f.key}`, f.desc ? 'desc' : 'asc')
        .orderBy('c.id', f.desc ? 'desc' : 'asc')
        .execute();
      const sums: ItemSum[] = [];
      const running: RunningSegment[] = [];
      let contracts: ContractRow[] = rows.map(({ page_total: _t, page_sums, page_running, ...c }) => {
        for (const [kind, amount, start_at, end_at] of jsonRows<[string, number, number, number]>(page_sums)) {
          sums.push({ contract_id: c.id, kind, amount: Number(amount), start_at: Number(start_at), end_at: Number(end_at) });
        }
        for (const [kind, rate, segStart, settled, charged] of jsonRows<[string, number, number, number, number]>(page_running)) {
          running.push({ contract_id: c.id, kind, rate_micro_per_hour: Number(rate), seg_start: Number(segStart), settled_until: Number(settled), seg_charged_micro: Number(charged) });
        }
        return c as ContractRow;
      });
      const keys = [...new Set(contracts.map((c) => Number(c[f.key])))];
      const more = keys.length > f.limit;
      // The key past the page only says that another page follows; its items are never looked up.
      if (more) contracts = contracts.filter((c) => Number(c[f.key]) !== keys[f.limit]);
      // An empty page (past the last key) still says how many match.
      const total = rows.length ? rows[0].page_total : (await countOf(f, tx).executeTakeFirstOrThrow()).n;
      return { contracts, more, total: Number(total), sums, running };
    },
  };
}

export type ChargesStore = ReturnType<typeof chargesStore>;

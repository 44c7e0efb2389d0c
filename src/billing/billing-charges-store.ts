import { sql, type ExpressionBuilder, type SelectQueryBuilder } from 'kysely';
import type { Tx } from '../platform/db/connect.js';
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

type ContractsQuery = SelectQueryBuilder<Database, 'billing_contracts', object>;

/** The read side of the ledger: contracts of a scope that overlap a range, paged by a fixed key. */
export function chargesStore(db: Tx) {
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

  return {
    /** The page's contracts, whether another page follows, and the number of keys matching. */
    async page(f: ChargesFilter, tx: Tx = db): Promise<{ contracts: ContractRow[]; more: boolean; total: number }> {
      let contracts = (await tx
        .selectFrom('billing_contracts')
        .selectAll()
        .where('id', 'in', pageContracts(f, tx) as any)
        .orderBy(f.key, f.desc ? 'desc' : 'asc')
        .orderBy('id', f.desc ? 'desc' : 'asc')
        .execute()) as ContractRow[];
      const keys = [...new Set(contracts.map((c) => Number(c[f.key])))];
      const more = keys.length > f.limit;
      if (more) contracts = contracts.filter((c) => Number(c[f.key]) !== keys[f.limit]);
      const total = await matching(f, tx)
        .select(f.key === 'id' ? sql<number>`count(*)`.as('n') : sql<number>`count(DISTINCT tree_key)`.as('n'))
        .executeTakeFirstOrThrow();
      return { contracts, more, total: Number((total as any).n) };
    },

    /** Per contract of the page and kind: what the days of the range charged. */
    async itemSums(f: ChargesFilter, fromDay: number, toDay: number, tx: Tx = db): Promise<ItemSum[]> {
      const rows = await tx
        .selectFrom('billing_charges')
        .select((eb) => [
          'contract_id',
          'kind',
          eb.fn.sum<number>('amount_micro').as('amount'),
          eb.fn.min<number>('start_at').as('start_at'),
          eb.fn.max<number>('end_at').as('end_at'),
        ])
        .where('contract_id', 'in', pageContracts(f, tx) as any)
        .where('day', '>=', fromDay)
        .where('day', '<=', toDay)
        .groupBy(['contract_id', 'kind'])
        .execute();
      return rows.map((r) => ({ contract_id: r.contract_id, kind: r.kind, amount: Number(r.amount), start_at: Number(r.start_at), end_at: Number(r.end_at) }));
    },

    async runningMeters(f: ChargesFilter, tx: Tx = db): Promise<MeterRow[]> {
      return tx
        .selectFrom('billing_meters')
        .selectAll()
        .where('running', '=', 1)
        .where('contract_id', 'in', pageContracts(f, tx) as any)
        .execute();
    },
  };
}

export type ChargesStore = ReturnType<typeof chargesStore>;

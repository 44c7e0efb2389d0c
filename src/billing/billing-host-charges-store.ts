import type { Tx } from '../platform/db/connect.js';

/** What a contract charged on one UTC day for one item kind (micro-dollars); `day` is the day's first second. */
export interface DailyCharge {
  source: string;
  kind: string;
  day: number;
  amount_micro: number;
}

/**
 * The settled charges of the contracts named by `sources` (`instance-<id>` …) on the days from `fromDay` to `toDay`
 * (first seconds of UTC days, inclusive): what renters paid, for a host's earnings (src/hosting/).
 */
export async function dailyChargesOf(tx: Tx, sources: readonly string[], fromDay: number, toDay: number): Promise<DailyCharge[]> {
  const out: DailyCharge[] = [];
  for (let i = 0; i < sources.length; i += 500) {
    const rows = await tx
      .selectFrom('billing_charges as c')
      .innerJoin('billing_contracts as k', 'k.id', 'c.contract_id')
      .select(['k.source', 'c.kind', 'c.day', 'c.amount_micro'])
      .where('k.source', 'in', sources.slice(i, i + 500))
      .where('c.day', '>=', fromDay)
      .where('c.day', '<=', toDay)
      .execute();
    for (const r of rows) out.push({ source: r.source, kind: r.kind, day: Number(r.day), amount_micro: Number(r.amount_micro) });
  }
  return out;
}

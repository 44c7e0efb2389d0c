import type { Clock } from '../platform/clock.js';
import type { DialectName, Tx } from '../platform/db/connect.js';
import { badRequest } from '../platform/errors.js';
import { toDollars } from '../platform/money.js';
import type { Scope } from '../platform/auth.js';
import { accrue, dayOf, SECONDS_PER_DAY, wholeSecond } from './billing-accrual.js';
import { chargesStore, type ChargesFilter, type ChargesPage, type ItemSum } from './billing-charges-store.js';
import type { ContractRow } from './billing-store.js';

import { CHARGES_LIMIT_DEFAULT } from './billing-schemas.js';

export { CHARGES_LIMIT_DEFAULT, CHARGES_LIMIT_MAX, CHARGES_LIMIT_MIN } from './billing-schemas.js';
export const CONTRACT_TYPES = ['instance', 'volume', 'serverless'] as const;
/** Child items in a fixed order, with the line each shows. */
const ITEM_LINES: Record<string, string> = {
  gpu: 'GPU compute',
  disk: 'Disk storage',
  bandwidth: 'Bandwidth',
  volume: 'Volume storage',
  worker: 'Serverless worker',
};
const ITEM_ORDER = Object.keys(ITEM_LINES);

/**
 * A serverless worker is an instance, and its contract's entry is that instance's (`instance-<id>`, type `instance`)
 * in both formats: spec "Show charges" has table rows of type `instance` or `volume` only, and type `serverless` only
 * on the tree format's endpoint and workergroup wrappers. The stored type stays `serverless`, so the `type` filter
 * still selects the workers (the vastai client's table then shows their endpoint and workergroup from `metadata`).
 */
const entryType = (c: ContractRow): string => (c.type === 'serverless' ? 'instance' : c.type);

export interface ChargeEntry {
  start: number;
  end: number;
  type: string;
  source: string | null;
  description: string;
  amount: number;
  metadata: Record<string, unknown>;
  items: ChargeEntry[];
}

export interface ChargesQuery {
  select_filters?: string;
  format?: 'table' | 'tree';
  latest_first?: boolean;
  limit?: number;
  after_token?: string;
  next_token?: string;
}

export interface ChargesReply {
  success: true;
  count: number;
  total: number;
  next_token: string | null;
  results: ChargeEntry[];
}

/** Reads `{day: {gte, lte}, type?: {in: [...]}}`; numbers may arrive as strings. Every mistake is a 400 naming it. */
export function parseSelectFilters(raw: string | undefined): { gte: number; lte: number; types: string[] | null } {
  if (raw === undefined || raw.trim() === '') throw badRequest('select_filters is required, with day: {gte, lte} in Unix seconds');
  let f: unknown;
  try {
    f = JSON.parse(raw);
  } catch {
    throw badRequest('select_filters must be a JSON object');
  }
  if (typeof f !== 'object' || f === null || Array.isArray(f)) throw badRequest('select_filters must be a JSON object');
  const { day, type } = f as Record<string, unknown>;
  if (typeof day !== 'object' || day === null || Array.isArray(day)) throw badRequest('select_filters.day is required: {gte, lte} in Unix seconds');
  const num = (v: unknown, name: string): number => {
    const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0 || n > 1e11) throw badRequest(`select_filters.day.${name} must be Unix seconds`);
    return n;
  };
  const gte = num((day as Record<string, unknown>).gte, 'gte');
  const lte = num((day as Record<string, unknown>).lte, 'lte');
  if (gte > lte) throw badRequest('select_filters.day.gte must not be after day.lte');
  let types: string[] | null = null;
  if (type !== undefined && type !== null) {
    const t = type as Record<string, unknown>;
    const list = typeof t === 'object' && !Array.isArray(t) ? (t.in ?? (t.eq !== undefined ? [t.eq] : undefined)) : undefined;
    if (!Array.isArray(list) || list.some((x) => !(CONTRACT_TYPES as readonly unknown[]).includes(x))) {
      throw badRequest(`select_filters.type must be {in: [...]} of ${CONTRACT_TYPES.join(', ')}`);
    }
    types = list as string[];
  }
  return { gte, lte, types };
}

// The token names the ordering it belongs to and the last key seen: a keyset position, never an offset, so pages
// stay put while new contracts and charges arrive.
const TOKEN = /^(table|tree)\.(asc|desc)\.(\d{1,15})$/;

function decodeToken(token: string, format: string, desc: boolean): number {
  let text = '';
  try {
    text = Buffer.from(token, 'base64url').toString('utf8');
  } catch {
    /* falls through to the 400 */
  }
  const m = TOKEN.exec(text);
  if (!m || m[1] !== format || m[2] !== (desc ? 'desc' : 'asc')) {
    throw badRequest('after_token is not a token of this listing (same format and order); start again without it');
  }
  return Number(m[3]);
}

const encodeToken = (format: string, desc: boolean, key: number) => Buffer.from(`${format}.${desc ? 'desc' : 'asc'}.${key}`).toString('base64url');

export function chargesServiceFactory({ db, dialect, clock }: { db: Tx; dialect: DialectName; clock: Clock }) {
  const store = chargesStore(db, dialect);

  /** Settled day rows of the range, plus what running meters accrued since, on the days of the range. */
  function itemsOf(f: ChargesFilter, fromDay: number, toDay: number, { sums, running }: Pick<ChargesPage, 'sums' | 'running'>): Map<number, ItemSum[]> {
    const byContract = new Map<number, ItemSum[]>();
    const find = (id: number, kind: string, start: number): ItemSum => {
      const list = byContract.get(id) ?? [];
      byContract.set(id, list);
      let s = list.find((x) => x.kind === kind);
      if (!s) list.push((s = { contract_id: id, kind, amount: 0, start_at: start, end_at: start }));
      return s;
    };
    for (const s of sums) Object.assign(find(s.contract_id, s.kind, s.start_at), s);
    for (const m of running) {
      for (const d of accrue(m, f.now).days) {
        if (d.day < fromDay || d.day > toDay) continue;
        const s = find(m.contract_id, m.kind, d.start);
        s.amount += d.amount;
        s.start_at = Math.min(s.start_at, d.start);
        s.end_at = Math.max(s.end_at, d.end);
      }
    }
    return byContract;
  }

  function contractEntry(c: ContractRow, items: ItemSum[], from: number, to: number): ChargeEntry {
    const children = [...items]
      .sort((a, b) => ITEM_ORDER.indexOf(a.kind) - ITEM_ORDER.indexOf(b.kind))
      .map(
        (i): ChargeEntry => ({
          start: i.start_at,
          end: i.end_at,
          type: i.kind,
          source: null,
          description: ITEM_LINES[i.kind] ?? i.kind,
          amount: toDollars(i.amount),
          metadata: {},
          items: [],
        }),
      );
    const total = items.reduce((sum, i) => sum + i.amount, 0);
    return {
      start: items.length ? Math.min(...items.map((i) => i.start_at)) : Math.max(Number(c.start_at), from),
      end: items.length ? Math.max(...items.map((i) => i.end_at)) : Math.min(Number(c.end_at), to),
      type: entryType(c),
      source: c.source,
      description: c.description,
      amount: toDollars(total),
      metadata: JSON.parse(c.metadata),
      items: children,
    };
  }

  /** A serverless wrapper: its amount is the sum of its children's, summed in micro-dollars. */
  function wrapper(source: string, description: string, metadata: Record<string, unknown>, children: Array<[ChargeEntry, number]>): [ChargeEntry, number] {
    const micro = children.reduce((s, [, m]) => s + m, 0);
    return [
      {
        start: Math.min(...children.map(([e]) => e.start)),
        end: Math.max(...children.map(([e]) => e.end)),
        type: 'serverless',
        source,
        description,
        amount: toDollars(micro),
        metadata,
        items: children.map(([e]) => e),
      },
      micro,
    ];
  }

  /** Tree format: serverless contracts grouped under their endpoint and workergroup, at the endpoint's place. */
  function groupTree(entries: Array<{ c: ContractRow; e: ChargeEntry; micro: number }>): ChargeEntry[] {
    const slots: Array<ChargeEntry | string> = [];
    const endpoints = new Map<string, Map<string, Array<[ChargeEntry, number]>>>();
    for (const { c, e, micro } of entries) {
      if (!c.endpoint_source) {
        slots.push(e);
        continue;
      }
      let groups = endpoints.get(c.endpoint_source);
      if (!groups) {
        endpoints.set(c.endpoint_source, (groups = new Map()));
        slots.push(c.endpoint_source);
      }
      const wg = c.workergroup_source ?? 'workergroup-0';
      groups.set(wg, [...(groups.get(wg) ?? []), [e, micro]]);
    }
    return slots.map((slot) => {
      if (typeof slot !== 'string') return slot;
      const endpointId = Number(slot.split('-')[1]);
      const wgs = [...endpoints.get(slot)!].map(([wg, children]) =>
        wrapper(wg, `Serverless ${wg}`, { endpoint_id: endpointId, workergroup_id: Number(wg.split('-')[1]) }, children),
      );
      return wrapper(slot, `Serverless ${slot}`, { endpoint_id: endpointId }, wgs)[0];
    });
  }

  return {
    async list(scope: Scope, q: ChargesQuery): Promise<ChargesReply> {
      const { gte, lte, types } = parseSelectFilters(q.select_filters);
      const format = q.format ?? 'table';
      const desc = q.latest_first ?? true;
      const token = q.after_token ?? q.next_token;
      const limit = q.limit ?? CHARGES_LIMIT_DEFAULT;
      // `day` selects whole UTC days: every day the range touches.
      const fromDay = dayOf(gte);
      const toDay = dayOf(lte);
      const filter: ChargesFilter = {
        scope,
        from: fromDay,
        to: toDay + SECONDS_PER_DAY - 1,
        now: wholeSecond(clock.now()),
        types,
        key: format === 'tree' ? 'tree_key' : 'id',
        desc,
        after: token ? decodeToken(token, format, desc) : null,
        limit,
      };
      const page = await store.page(filter, fromDay, toDay);
      const { contracts, more, total } = page;
      const items = itemsOf(filter, fromDay, toDay, page);
      const entries = contracts.map((c) => {
        const list = items.get(c.id) ?? [];
        return { c, e: contractEntry(c, list, filter.from, filter.to), micro: list.reduce((s, i) => s + i.amount, 0) };
      });
      const results = format === 'tree' ? groupTree(entries) : entries.map((x) => x.e);
      return {
        success: true,
        count: results.length,
        total,
        next_token: more ? encodeToken(format, desc, Number(contracts[contracts.length - 1][filter.key])) : null,
        results,
      };
    },
  };
}

export type ChargesService = ReturnType<typeof chargesServiceFactory>;

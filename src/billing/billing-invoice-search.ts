/**
 * `GET /api/v0/invoices` (`vastai search invoices '<query>'`, client-compat-more §b): `select_filters`
 * `{<field>: {<op>: <value>}}` over a user's invoice records, in memory (a user has few). Values arrive as strings
 * except the times (`when`, `paid_on`, `payment_expected`, epoch seconds); each is coerced to its field's type.
 */
import { badRequest } from '../platform/errors.js';

const OPS = ['eq', 'neq', 'lt', 'lte', 'gt', 'gte', 'in', 'notin'] as const;
type Op = (typeof OPS)[number];
type FieldType = 'number' | 'boolean' | 'string';

/** The fields users filter on; the processor-specific ones (Stripe, PayPal) exist and are always null here. */
export const INVOICE_FIELDS: Record<string, FieldType> = {
  id: 'number', user_id: 'number', when: 'number', paid_on: 'number', payment_expected: 'number', amount_cents: 'number',
  is_credit: 'boolean', is_delayed: 'boolean', balance_before: 'number', balance_after: 'number', original_amount: 'number',
  event_id: 'string', cut_amount: 'number', cut_percent: 'number', extra: 'string', service: 'string',
  stripe_charge: 'string', stripe_refund: 'string', stripe_payout: 'string', error: 'string', paypal_email: 'string',
  transfer_group: 'string', failed: 'boolean', refunded: 'boolean', is_check: 'boolean',
};

export interface InvoiceFilter {
  field: string;
  op: Op;
  value: number | boolean | string | (number | boolean | string)[];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function coerce(field: string, type: FieldType, v: unknown): number | boolean | string {
  const fail = () => badRequest(`select_filters.${field}: ${JSON.stringify(v)} is not a ${type}`);
  if (type === 'string') {
    if (typeof v === 'string' || typeof v === 'number') return String(v);
    throw fail();
  }
  if (type === 'boolean') {
    if (typeof v === 'boolean') return v;
    if (v === 'true' || v === 'True' || v === '1' || v === 1) return true;
    if (v === 'false' || v === 'False' || v === '0' || v === 0) return false;
    throw fail();
  }
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  if (!Number.isFinite(n)) throw fail();
  return n;
}

/** Parses `select_filters`. Throws a 400 naming the field or operator at fault. */
export function parseInvoiceFilters(raw: string | undefined): InvoiceFilter[] {
  if (raw === undefined || raw === '') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw badRequest('select_filters must be a JSON object');
  }
  if (!isObject(parsed)) throw badRequest('select_filters must be a JSON object');
  const out: InvoiceFilter[] = [];
  for (const [field, cond] of Object.entries(parsed)) {
    const type = INVOICE_FIELDS[field];
    if (!type) throw badRequest(`select_filters: unknown field ${JSON.stringify(field)}; fields: ${Object.keys(INVOICE_FIELDS).join(', ')}`);
    if (!isObject(cond) || Object.keys(cond).length === 0) throw badRequest(`select_filters.${field} must be an object like {"eq": value}`);
    for (const [op, v] of Object.entries(cond)) {
      if (!(OPS as readonly string[]).includes(op)) throw badRequest(`select_filters.${field}: unknown operator ${JSON.stringify(op)}; use one of ${OPS.join(', ')}`);
      if (op === 'in' || op === 'notin') {
        if (!Array.isArray(v)) throw badRequest(`select_filters.${field}.${op} must be a list`);
        out.push({ field, op: op as Op, value: v.map((x) => coerce(field, type, x)) });
      } else out.push({ field, op: op as Op, value: coerce(field, type, v) });
    }
  }
  return out;
}

function passes(actual: unknown, f: InvoiceFilter): boolean {
  const v = f.value;
  switch (f.op) {
    case 'eq': return actual === v;
    case 'neq': return actual !== v;
    case 'in': return (v as unknown[]).includes(actual);
    case 'notin': return !(v as unknown[]).includes(actual);
    default: {
      if (typeof actual !== 'number' || typeof v !== 'number') return false; // null never orders
      return f.op === 'lt' ? actual < v : f.op === 'lte' ? actual <= v : f.op === 'gt' ? actual > v : actual >= v;
    }
  }
}

export function filterInvoices<T extends Record<string, unknown>>(rows: T[], filters: InvoiceFilter[]): T[] {
  return rows.filter((r) => filters.every((f) => passes(r[f.field] ?? null, f)));
}

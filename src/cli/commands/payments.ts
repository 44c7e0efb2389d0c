/** `transfer credit`, `show invoices`, `search invoices` (client-compat-more §b). */
import type { Command } from 'commander';
import { action, numberArg, UsageError } from '../context.js';
import { parseOfferQuery, QueryError, type FieldDef, type QueryFields } from '../offer-query.js';
import { counted, utc } from '../output.js';
import type { Groups } from '../program.js';
import { dayArg } from './billing.js';

const DAY_S = 86_400;

const INVOICE_QUERY: QueryFields = {
  command: 'search invoices',
  aliases: {},
  fields: {
    id: { type: 'int', desc: 'record id' },
    when: { type: 'float', unit: 's', desc: 'when it happened, Unix seconds' },
    amount_cents: { type: 'int', desc: 'amount in cents (negative: credit sent away)' },
    is_credit: { type: 'bool', desc: 'credit into the account' },
    service: { type: 'string', desc: 'credit, transfer_in or transfer_out' },
  } satisfies Record<string, FieldDef>,
};

const invoiceColumns = [
  { key: 'timestamp', header: 'Time (UTC)', fmt: utc },
  { key: 'type', header: 'Type' },
  { key: 'description', header: 'Description' },
  { key: 'instance_id', header: 'Instance', align: 'right' as const },
  { key: 'amount', header: 'Amount $', fmt: (v: number) => v.toFixed(4), align: 'right' as const },
];

export function registerPayments(g: Groups, verb: (name: string, what: string) => Command): void {
  verb('transfer', 'transfer: credit')
    .command('credit')
    .description('send credit from your account to another (by e-mail or user id)')
    .argument('<recipient>', 'account e-mail or user id')
    .argument('<amount>', 'dollars', numberArg('amount', 0))
    .addHelpText('after', '\nExample:\n  gpuplane transfer credit alice@example.com 25')
    .action(
      action(async (ctx, recipient: string, amount: number) => {
        const r = await ctx.client.payments.transferCredit(recipient, amount);
        ctx.out.print(r, () => `Sent $${amount} to ${recipient}`);
      }),
    );
  g.show
    .command('invoices')
    .description('charges and payments between two days (default: the last day), each totalled, and your credit now')
    .option('-s, --start <day>', 'from, YYYY-MM-DD (UTC) or Unix seconds', dayArg('--start'))
    .option('-e, --end <day>', 'until, YYYY-MM-DD (UTC) or Unix seconds', dayArg('--end', true))
    .option('-c, --only-charges', 'only charges')
    .option('-p, --only-credits', 'only payments')
    .addHelpText('after', '\nExample:\n  gpuplane show invoices -s 2026-11-01 -e 2026-11-23')
    .action(
      action(async (ctx, o: { start?: number; end?: number; onlyCharges?: boolean; onlyCredits?: boolean }) => {
        if (o.onlyCharges && o.onlyCredits) throw new UsageError('--only-charges and --only-credits exclude each other');
        const edate = o.end;
        const sdate = o.start ?? (edate !== undefined ? edate - DAY_S : undefined);
        const r = await ctx.client.payments.invoices({ sdate, edate, incCharges: !o.onlyCredits });
        const rows = r.invoices.filter((x) => x.amount !== 0 && (o.onlyCharges ? x.type === 'charge' : o.onlyCredits ? x.type === 'payment' : true));
        ctx.out.print({ ...r, invoices: rows }, () => {
          const table = rows.length ? ctx.out.table(rows as unknown as Record<string, unknown>[], invoiceColumns) : 'no charges or payments in that range';
          // Charges (money spent) and payments (money in, or sent away) are totalled apart: one "Total" adding both,
          // as this printed before, meant nothing (issue 29 item 10). The balance says where the two leave the account.
          const totals: string[] = [];
          for (const [type, one, shown] of [['charge', 'Charges', !o.onlyCredits], ['payment', 'Payments', !o.onlyCharges]] as const) {
            if (!shown) continue;
            const of = rows.filter((x) => x.type === type);
            totals.push(`${one}: $${of.reduce((s, x) => s + x.amount, 0).toFixed(4)} (${counted(of.length, type)})`);
          }
          return `${table}\n${totals.join('\n')}\nCredit now: $${r.current.credit.toFixed(2)}`;
        });
      }),
    );
  g.search
    .command('invoices')
    .description('search your invoice records (credit added, transfers)')
    .argument('[query]', 'filters, e.g. "is_credit=true amount_cents>1000"', '')
    .addHelpText('after', `\nFields: ${Object.keys(INVOICE_QUERY.fields).join(', ')}\n\nExample:\n  gpuplane search invoices 'is_credit=true'`)
    .action(
      action(async (ctx, text: string) => {
        let filters: Record<string, Record<string, unknown>>;
        try {
          filters = parseOfferQuery(text, {}, INVOICE_QUERY) as Record<string, Record<string, unknown>>;
        } catch (err) {
          if (err instanceof QueryError) throw new UsageError(err.message);
          throw err;
        }
        const rows = await ctx.client.payments.searchInvoices(filters);
        ctx.out.print(rows, () => (rows.length ? rows.map((x) => `${x.id}\t${utc(x.when)}\t${x.service}\t${(x.amount_cents / 100).toFixed(2)}`).join('\n') : 'no invoice records'));
      }),
    );
}

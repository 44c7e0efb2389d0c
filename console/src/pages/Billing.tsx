/**
 * Billing (issue 15): credit, charges as a table and as a tree for a date range (spec: Show charges), a chart of spend
 * per day by type (instance, volume, serverless), CSV export, and invoices (credit added, transfers, charges).
 * Days are UTC days of the server's clock (virtual in the emulator), never the browser's.
 */
import { lazy, Suspense, useEffect, useMemo, useState, type FormEvent } from 'react';
import { api } from '../lib/api.js';
import { useSession } from '../lib/session.js';
import { chargesCsv, lastDays, parseRange, rangeSeconds, spendPerDay, totalOf, treeRows, type Charge, type DayRange } from '../lib/billing.js';
import { dayLabel, dayOf, dollars, utcTime } from '../lib/format.js';
import { ErrorNote, Field } from '../components/Field.js';
import { useLoad } from '../components/useLoad.js';

/** The API's largest page of charges (spec: Show charges, `limit` at most 500). */
const CHARGES_LIMIT_MAX = 500;

const BarChart = lazy(() => import('../components/BarChart.js').then((m) => ({ default: m.BarChart })));

/** Every page of charges of the range (the API pages at most 500 entries). */
async function allCharges(r: DayRange, format: 'table' | 'tree'): Promise<Charge[]> {
  const out: Charge[] = [];
  let after: string | undefined;
  do {
    const page = await api.billing.charges({ ...rangeSeconds(r), format, limit: CHARGES_LIMIT_MAX, after });
    out.push(...page.results);
    after = page.next_token ?? undefined;
  } while (after);
  return out;
}

function download(name: string, text: string, type: string) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function ChargesTree({ charges }: { charges: Charge[] }) {
  const [open, setOpen] = useState<Set<string>>(new Set());
  const rows = treeRows(charges, open);
  return (
    <div className="table-wrap">
      <table aria-label="Charges tree">
        <thead><tr><th scope="col">Description</th><th scope="col">Type</th><th scope="col">Source</th><th scope="col">From</th><th scope="col">To</th><th scope="col">Amount</th></tr></thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.key}>
              <td style={{ paddingLeft: `${0.5 + r.depth * 1.25}rem` }}>
                {r.hasChildren ? (
                  <button
                    type="button"
                    className="tree-toggle"
                    aria-expanded={open.has(r.key)}
                    aria-label={`${open.has(r.key) ? 'Collapse' : 'Expand'} ${r.charge.description}`}
                    onClick={() => setOpen((s) => { const n = new Set(s); if (n.has(r.key)) n.delete(r.key); else n.add(r.key); return n; })}
                  >
                    {open.has(r.key) ? '▾' : '▸'}
                  </button>
                ) : <span aria-hidden="true" style={{ display: 'inline-block', width: '1.2rem' }} />}
                {r.charge.description}
              </td>
              <td>{r.charge.type}</td>
              <td>{r.charge.source ?? ''}</td>
              <td>{utcTime(r.charge.start)}</td>
              <td>{utcTime(r.charge.end)}</td>
              <td>{dollars(r.charge.amount)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export default function BillingPage() {
  const { user, refresh } = useSession();
  const clock = useLoad(() => api.emulator.clock().then((c) => c.now).catch(() => Math.floor(Date.now() / 1000)));
  const today = clock.data === undefined ? undefined : dayOf(clock.data);
  const [fromText, setFromText] = useState('');
  const [toText, setToText] = useState('');
  const [range, setRange] = useState<DayRange | null>(null);
  const [rangeErr, setRangeErr] = useState<string | null>(null);
  const [view, setView] = useState<'table' | 'tree'>('table');

  useEffect(() => {
    if (today === undefined || range) return;
    const r = lastDays(today, 7);
    setRange(r);
    setFromText(dayLabel(r.from));
    setToText(dayLabel(r.to));
  }, [today, range]);

  const charges = useLoad(async () => (range ? allCharges(range, view) : undefined), [range, view]);
  const perDay = useLoad(async () => {
    if (!range) return undefined;
    const days = Array.from({ length: range.to - range.from + 1 }, (_, i) => range.from + i);
    const results = await Promise.all(days.map((d) => allCharges({ from: d, to: d }, 'table')));
    return spendPerDay(range, new Map(days.map((d, i) => [d, results[i]!])));
  }, [range]);
  const invoices = useLoad(async () => (range ? api.payments.invoices({ sdate: rangeSeconds(range).start, edate: rangeSeconds(range).end }) : undefined), [range]);

  const chart = useMemo(() => {
    const d = perDay.data;
    if (!d) return null;
    return {
      labels: d.map((r) => r.label),
      series: [
        { label: 'Instances', color: '#1d4ed8', values: d.map((r) => r.instance) },
        { label: 'Volumes', color: '#f59e0b', values: d.map((r) => r.volume) },
        { label: 'Serverless', color: '#10b981', values: d.map((r) => r.serverless) },
      ],
    };
  }, [perDay.data]);

  const apply = (e: FormEvent) => {
    e.preventDefault();
    const r = parseRange(fromText, toText);
    if (typeof r === 'string') return setRangeErr(r);
    setRangeErr(null);
    setRange(r);
    void refresh();
  };

  return (
    <section>
      <h1>Billing</h1>
      <p>
        Credit: <strong data-testid="credit">{user && !user.restricted ? dollars(user.credit) : '…'}</strong>{' '}
        <button type="button" className="small" onClick={() => { void refresh(); void charges.reload(); void perDay.reload(); void invoices.reload(); }}>Refresh</button>
      </p>

      <form onSubmit={apply} className="row-form" aria-label="Date range">
        <Field label="From (UTC)" type="date" value={fromText} onChange={(e) => setFromText(e.target.value)} error={rangeErr} />
        <Field label="To (UTC)" type="date" value={toText} onChange={(e) => setToText(e.target.value)} />
        <div className="field"><button type="submit" className="primary">Show charges</button></div>
      </form>

      <h2>Spend per day</h2>
      <ErrorNote error={perDay.error} />
      {chart && (
        <Suspense fallback={<p aria-busy="true">Loading chart…</p>}>
          <BarChart title="Spend per day by type" labels={chart.labels} series={chart.series} />
        </Suspense>
      )}

      <h2>Charges</h2>
      <div className="actions" role="group" aria-label="Charges view">
        <button type="button" aria-pressed={view === 'table'} onClick={() => setView('table')}>Table</button>
        <button type="button" aria-pressed={view === 'tree'} onClick={() => setView('tree')}>Tree</button>
        <button
          type="button"
          disabled={!charges.data || charges.data.length === 0}
          onClick={() => range && charges.data && download(`charges-${dayLabel(range.from)}-${dayLabel(range.to)}.csv`, chargesCsv(charges.data), 'text/csv')}
        >
          Export CSV
        </button>
      </div>
      <ErrorNote error={charges.error} />
      {charges.data && charges.data.length === 0 && <p>No charges in this range.</p>}
      {charges.data && charges.data.length > 0 && (
        <>
          <p>Total in range: <strong data-testid="charges-total">{dollars(totalOf(charges.data))}</strong> ({charges.data.length} {charges.data.length === 1 ? 'contract' : 'contracts'})</p>
          {view === 'tree' ? <ChargesTree charges={charges.data} /> : (
            <div className="table-wrap">
              <table aria-label="Charges">
                <thead><tr><th scope="col">Description</th><th scope="col">Type</th><th scope="col">Source</th><th scope="col">From</th><th scope="col">To</th><th scope="col">Amount</th></tr></thead>
                <tbody>
                  {charges.data.map((c, i) => (
                    <tr key={`${c.source}-${i}`}>
                      <td>{c.description}</td><td>{c.type}</td><td>{c.source ?? ''}</td><td>{utcTime(c.start)}</td><td>{utcTime(c.end)}</td><td>{dollars(c.amount)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}

      <h2>Invoices</h2>
      <ErrorNote error={invoices.error} />
      {invoices.data && invoices.data.invoices.length === 0 && <p>No invoices or payments in this range.</p>}
      {invoices.data && invoices.data.invoices.length > 0 && (
        <div className="table-wrap">
          <table aria-label="Invoices">
            <thead><tr><th scope="col">When</th><th scope="col">Kind</th><th scope="col">Description</th><th scope="col">Amount</th></tr></thead>
            <tbody>
              {invoices.data.invoices.map((iv) => (
                <tr key={iv.id}>
                  <td>{utcTime(iv.timestamp)}</td>
                  <td>{iv.type === 'payment' ? 'Payment' : 'Charge'}</td>
                  <td className="wrap">{iv.description}</td>
                  <td>{dollars(iv.amount)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

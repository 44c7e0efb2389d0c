/**
 * Machines (issue 15: Hosts; client-compat-more §a): a host's machines with their state and GPUs, listing (prices) and
 * unlisting, maintenance windows, and an earnings chart per day.
 */
import { lazy, Suspense, useMemo, useState, type FormEvent } from 'react';
import { api, errorText } from '../lib/api.js';
import { dayLabel, dayOf, dollars, utcTime } from '../lib/format.js';
import { listingBody, machineState, occupancy, occupancySummary, secondsToUtcInput, utcInputToSeconds, type ListingForm } from '../lib/hosting.js';
import { ErrorNote, Field } from '../components/Field.js';
import { Confirm, Modal } from '../components/Modal.js';
import { useAction, useLoad } from '../components/useLoad.js';
import type { Machine } from '../../../src/sdk/api/machines.js';

const BarChart = lazy(() => import('../components/BarChart.js').then((m) => ({ default: m.BarChart })));

const EARNINGS_DAYS = 14;

function ListDialog({ machine, onClose, onDone }: { machine: Machine; onClose(): void; onDone(): void }) {
  const [form, setForm] = useState<ListingForm>({
    price_gpu: String(machine.listed_gpu_cost || ''),
    price_disk: String(machine.listed_storage_cost || ''),
    price_inetu: String(machine.listed_inet_up_cost || ''),
    price_inetd: String(machine.listed_inet_down_cost || ''),
    price_min_bid: String(machine.min_bid_price || ''),
    min_chunk: String(machine.min_chunk || 1),
    end_date: '',
  });
  const [fieldErr, setFieldErr] = useState<{ field: keyof ListingForm; error: string } | null>(null);
  const act = useAction();
  const set = (k: keyof ListingForm) => (e: { target: { value: string } }) => setForm((f) => ({ ...f, [k]: e.target.value }));
  const err = (k: keyof ListingForm) => (fieldErr?.field === k ? fieldErr.error : null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const body = listingBody(machine.id, form);
    if ('field' in body) return setFieldErr(body);
    setFieldErr(null);
    if (await act.run(() => api.machines.listMachine(body))) onDone();
  };
  return (
    <Modal title={`List machine ${machine.id}`} open onClose={onClose}>
      <form onSubmit={submit}>
        <p className="muted">Blank fields keep their current value.</p>
        <div className="grid2">
          <Field label="GPU price ($/GPU/hour)" inputMode="decimal" value={form.price_gpu} onChange={set('price_gpu')} error={err('price_gpu')} />
          <Field label="Minimum bid ($/GPU/hour)" inputMode="decimal" value={form.price_min_bid} onChange={set('price_min_bid')} error={err('price_min_bid')} />
          <Field label="Disk price ($/GB/month)" inputMode="decimal" value={form.price_disk} onChange={set('price_disk')} error={err('price_disk')} />
          <Field label="Upload price ($/GB)" inputMode="decimal" value={form.price_inetu} onChange={set('price_inetu')} error={err('price_inetu')} />
          <Field label="Download price ($/GB)" inputMode="decimal" value={form.price_inetd} onChange={set('price_inetd')} error={err('price_inetd')} />
          <Field label="Smallest rental (GPUs)" inputMode="numeric" value={form.min_chunk} onChange={set('min_chunk')} error={err('min_chunk')} />
          <Field label="Listing ends on (UTC date)" type="date" value={form.end_date} onChange={set('end_date')} error={err('end_date')} hint="Blank: keep the current end date." />
        </div>
        <ErrorNote error={act.error} />
        <div className="actions">
          <button type="button" onClick={onClose}>Cancel</button>
          <button type="submit" className="primary" disabled={act.busy}>List machine</button>
        </div>
      </form>
    </Modal>
  );
}

function MaintenanceDialog({ machine, now, onClose, onDone }: { machine: Machine; now: number; onClose(): void; onDone(): void }) {
  const [start, setStart] = useState(secondsToUtcInput(now + 86_400));
  const [hours, setHours] = useState('2');
  const [category, setCategory] = useState('');
  const [fieldErr, setFieldErr] = useState<string | null>(null);
  const [hoursErr, setHoursErr] = useState<string | null>(null);
  const act = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const s = utcInputToSeconds(start);
    const h = Number(hours);
    if (Number.isNaN(s)) return setFieldErr('Enter a start date and time.');
    setFieldErr(null);
    if (!Number.isFinite(h) || h <= 0) return setHoursErr('Enter a number of hours above 0.');
    setHoursErr(null);
    if (await act.run(() => api.machines.scheduleMaintenance(machine.id, s, h, category.trim() || undefined))) onDone();
  };
  return (
    <Modal title={`Maintenance of machine ${machine.id}`} open onClose={onClose}>
      <form onSubmit={submit}>
        <Field label="Starts (UTC)" type="datetime-local" value={start} onChange={(e) => setStart(e.target.value)} error={fieldErr} />
        <Field label="Duration (hours)" inputMode="decimal" value={hours} onChange={(e) => setHours(e.target.value)} error={hoursErr} />
        <Field label="Reason" value={category} maxLength={64} onChange={(e) => setCategory(e.target.value)} hint="Optional, e.g. power, network, hardware." />
        <ErrorNote error={act.error} />
        <div className="actions">
          <button type="button" onClick={onClose}>Cancel</button>
          <button type="submit" className="primary" disabled={act.busy}>Schedule maintenance</button>
        </div>
      </form>
    </Modal>
  );
}

export default function MachinesPage() {
  const machines = useLoad(() => api.machines.list('me').then((r) => r.machines));
  const clock = useLoad(() => api.emulator.clock().then((c) => c.now).catch(() => Math.floor(Date.now() / 1000)));
  const today = clock.data === undefined ? undefined : dayOf(clock.data);
  const earnings = useLoad(
    () => (today === undefined ? Promise.resolve(undefined) : api.machines.earnings({ sday: today - EARNINGS_DAYS + 1, eday: today })),
    [today],
  );
  const [listing, setListing] = useState<Machine | null>(null);
  const [maint, setMaint] = useState<Machine | null>(null);
  const [unlisting, setUnlisting] = useState<Machine | null>(null);
  const [rowErr, setRowErr] = useState<{ id: number; error: string } | null>(null);

  const chart = useMemo(() => {
    const e = earnings.data;
    if (!e) return null;
    const byDay = new Map(e.per_day.map((d) => [d.day, d]));
    const days = Array.from({ length: e.eday - e.sday + 1 }, (_, i) => e.sday + i);
    return {
      labels: days.map(dayLabel),
      series: [
        { label: 'GPU', color: '#1d4ed8', values: days.map((d) => byDay.get(d)?.gpu_earn ?? 0) },
        { label: 'Storage', color: '#f59e0b', values: days.map((d) => byDay.get(d)?.sto_earn ?? 0) },
        { label: 'Bandwidth', color: '#10b981', values: days.map((d) => byDay.get(d)?.bw_earn ?? 0) },
      ],
    };
  }, [earnings.data]);

  const act = async (m: Machine, fn: () => Promise<unknown>) => {
    setRowErr(null);
    try {
      await fn();
    } catch (err) {
      setRowErr({ id: m.id, error: errorText(err) });
    }
    await machines.reload();
  };

  return (
    <section>
      <h1>Machines</h1>
      <ErrorNote error={machines.error} />
      {machines.data && machines.data.length === 0 && <p>You have no machines. Run <code>gpuplane agent</code> on a GPU host to add one.</p>}
      {machines.data?.map((m) => {
        const st = machineState(m);
        return (
          <article key={m.id} className="card" aria-labelledby={`machine-${m.id}`}>
            <h2 id={`machine-${m.id}`}>Machine {m.id}: {m.num_gpus}× {m.gpu_name} <span className={`badge ${st.tone}`}>{st.word}</span></h2>
            <p>
              {m.hostname} · {m.geolocation ?? 'unknown location'} · {m.disk_space} GB disk · reliability {(m.reliability2 * 100).toFixed(1)}% · {m.verification}
            </p>
            <p>
              GPUs: {occupancySummary(m.gpu_occupancy)}{' '}
              <span className="sr-only">({occupancy(m.gpu_occupancy).map((o, i) => `GPU ${i}: ${o}`).join('; ')})</span>
            </p>
            {m.listed ? (
              <p>
                Listed at {dollars(m.listed_gpu_cost)}/GPU/hour (bids from {dollars(m.min_bid_price)}), disk {dollars(m.listed_storage_cost)}/GB/month, until {utcTime(m.end_date)}.
              </p>
            ) : (
              <p>Not listed: renters cannot find it.</p>
            )}
            {m.maintenance.length > 0 && (
              <>
                <h3>Maintenance windows</h3>
                <ul>
                  {m.maintenance.map((w) => (
                    <li key={w.start_time}>{utcTime(w.start_time)} to {utcTime(w.end_time)} ({w.duration_hours} h, {w.maintenance_category})</li>
                  ))}
                </ul>
              </>
            )}
            <div className="actions">
              <button type="button" className="primary" onClick={() => setListing(m)} aria-label={`${m.listed ? 'Change listing of' : 'List'} machine ${m.id}`}>{m.listed ? 'Change listing' : 'List'}</button>
              {m.listed && <button type="button" onClick={() => setUnlisting(m)} aria-label={`Unlist machine ${m.id}`}>Unlist</button>}
              <button type="button" onClick={() => setMaint(m)} aria-label={`Schedule maintenance of machine ${m.id}`}>Schedule maintenance</button>
              {m.maintenance.length > 0 && (
                <button type="button" onClick={() => act(m, () => api.machines.cancelMaintenance(m.id))} aria-label={`Cancel maintenance of machine ${m.id}`}>Cancel maintenance</button>
              )}
            </div>
            {rowErr?.id === m.id && <ErrorNote error={rowErr.error} />}
          </article>
        );
      })}

      <h2>Earnings, last {EARNINGS_DAYS} days</h2>
      <ErrorNote error={earnings.error} />
      {earnings.data && (
        <p>
          Total {dollars(earnings.data.summary.earn)} after the service fee of {(earnings.data.service_fee * 100).toFixed(0)}% (renters paid {dollars(earnings.data.summary.gross)}).
        </p>
      )}
      {chart && (
        <Suspense fallback={<p aria-busy="true">Loading chart…</p>}>
          <BarChart title="Earnings per day" labels={chart.labels} series={chart.series} />
        </Suspense>
      )}

      {listing && <ListDialog machine={listing} onClose={() => setListing(null)} onDone={() => { setListing(null); void machines.reload(); }} />}
      {maint && clock.data !== undefined && (
        <MaintenanceDialog machine={maint} now={clock.data} onClose={() => setMaint(null)} onDone={() => { setMaint(null); void machines.reload(); }} />
      )}
      <Confirm
        open={unlisting !== null}
        title="Unlist machine"
        message={`Unlist machine ${unlisting?.id}? Renters will no longer find it; running rentals continue.`}
        action="Unlist"
        onClose={() => setUnlisting(null)}
        onConfirm={() => { const m = unlisting!; setUnlisting(null); void act(m, () => api.machines.unlist(m.id)); }}
      />
    </section>
  );
}

/**
 * Offers (issue 15): a filter form that builds the CLI's strict query (lib/offer-filters.ts), kept in the URL so a
 * search is a link; a table sorted by the server on the column chosen; a rent dialog.
 */
import { useEffect, useMemo, useState, type FormEvent } from 'react';
import { OFFER_FIELDS } from '../../../src/cli/offer-query.js';
import { api, errorText } from '../lib/api.js';
import {
  buildSearch, cliCommand, formFieldOfError, formFromParams, formToParams, sortOf, toggleOrder, type FormErrors, type OfferForm,
} from '../lib/offer-filters.js';
import { navigate, useLocation } from '../lib/router.js';
import { ErrorNote, Field } from '../components/Field.js';
import { RentDialog } from '../components/RentDialog.js';
import { counted } from '../lib/format.js';

type Offer = Awaited<ReturnType<typeof api.offers.search>>['offers'][number];

/** A value in the unit a user writes the field in (RAM in GB, sent in MB), as the one field table says (offer-fields.ts). */
const inUserUnit = (field: string, v: unknown) => `${Math.round(Number(v) / (OFFER_FIELDS[field].mult ?? 1))} ${OFFER_FIELDS[field].unit ?? ''}`.trim();
const COLUMNS: { field: string; header: string; cell(o: Offer): string }[] = [
  { field: 'id', header: 'Offer', cell: (o) => String(o.id) },
  { field: 'gpu_name', header: 'GPU', cell: (o) => `${o.num_gpus}× ${o.gpu_name}` },
  { field: 'gpu_ram', header: 'GPU RAM', cell: (o) => inUserUnit('gpu_ram', o.gpu_ram) },
  { field: 'cpu_ram', header: 'RAM', cell: (o) => inUserUnit('cpu_ram', o.cpu_ram) },
  { field: 'dph_total', header: '$/hr', cell: (o) => Number(o.dph_total).toFixed(4) },
  { field: 'reliability', header: 'Reliability', cell: (o) => `${(Number(o.reliability) * 100).toFixed(1)} %` },
  { field: 'geolocation', header: 'Region', cell: (o) => String(o.geolocation ?? '') },
  { field: 'verified', header: 'Verified', cell: (o) => (o.verified ? 'yes' : 'no') },
  { field: 'score', header: 'Score', cell: (o) => Number(o.score).toFixed(1) },
];

export default function OffersPage() {
  const { search: params } = useLocation();
  // Keyed by the query text: the URLSearchParams object is new on every render.
  const query = params.toString();
  const applied = useMemo(() => formFromParams(new URLSearchParams(query)), [query]);
  const [form, setForm] = useState<OfferForm>(applied);
  const [offers, setOffers] = useState<Offer[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [renting, setRenting] = useState<Offer | null>(null);
  const [created, setCreated] = useState<string | null>(null);
  const built = useMemo(() => buildSearch(form), [form]);

  // The URL is the search: run it whenever it changes (a link, the back button, a submitted form).
  useEffect(() => {
    setForm(applied);
    const r = buildSearch(applied);
    if (!r.search) return;
    let live = true;
    setBusy(true);
    setError(null);
    api.offers.search(r.search)
      .then((res) => live && setOffers(res.offers))
      .catch((err) => {
        if (!live) return;
        // A refused search has no offers: the last search's list would read as its answer.
        setOffers(null);
        setError(errorText(err));
      })
      .finally(() => live && setBusy(false));
    return () => {
      live = false;
    };
  }, [applied]);

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!built.search) return;
    const q = formToParams(form).toString();
    navigate(`/offers${q ? `?${q}` : ''}`);
  };
  const sortBy = (field: string) => {
    const q = formToParams({ ...applied, order: toggleOrder(applied.order, field) }).toString();
    navigate(`/offers?${q}`);
  };
  const set = <K extends keyof OfferForm>(k: K, v: OfferForm[K]) => setForm((f) => ({ ...f, [k]: v }));
  // A refusal that names a filter (`gpu_name.eq: "RTX4090" cannot match: …`) shows at that field while it still
  // holds the value searched for (edited, the message goes: it was about the old value); any other shows above.
  const errorField = error ? formFieldOfError(error) : undefined;
  const fieldError = errorField && form[errorField] === applied[errorField] ? errorField : undefined;
  const errs: FormErrors = { ...(fieldError ? { [fieldError]: error } : {}), ...(built.errors ?? {}) };

  return (
    <section>
      <h1>Offers</h1>
      <form onSubmit={submit} aria-label="Search offers" noValidate>
        <div className="filters">
          <Field label="GPU model" placeholder="RTX 4090" value={form.gpu} error={errs.gpu} onChange={(e) => set('gpu', e.target.value)} />
          <Field label="GPUs at least" inputMode="numeric" value={form.count} error={errs.count} onChange={(e) => set('count', e.target.value)} />
          <Field label="GPU RAM at least (GB)" inputMode="decimal" value={form.gpuRam} error={errs.gpuRam} onChange={(e) => set('gpuRam', e.target.value)} />
          <Field label="RAM at least (GB)" inputMode="decimal" value={form.cpuRam} error={errs.cpuRam} onChange={(e) => set('cpuRam', e.target.value)} />
          <Field label="Price at most ($/hr)" inputMode="decimal" value={form.maxPrice} error={errs.maxPrice} onChange={(e) => set('maxPrice', e.target.value)} />
          <Field label="Reliability at least (0–1)" inputMode="decimal" value={form.minReliability} error={errs.minReliability} onChange={(e) => set('minReliability', e.target.value)} />
          <Field label="Regions" placeholder="US, DE" hint="Country codes or regions (Europe, North_America …), comma-separated" value={form.region} error={errs.region} onChange={(e) => set('region', e.target.value)} />
          <Field label="Order" hint="Fields, comma-separated; a trailing - sorts descending" value={form.order} error={errs.order} onChange={(e) => set('order', e.target.value)} />
          <div className="field">
            <label className="radio"><input type="checkbox" checked={form.verified} onChange={(e) => set('verified', e.target.checked)} /> Verified hosts only</label>
          </div>
          <fieldset>
            <legend>Type</legend>
            <label className="radio"><input type="radio" name="type" checked={form.type === 'on-demand'} onChange={() => set('type', 'on-demand')} /> On-demand</label>
            <label className="radio"><input type="radio" name="type" checked={form.type === 'bid'} onChange={() => set('type', 'bid')} /> Bid (interruptible)</label>
          </fieldset>
        </div>
        <div className="actions">
          <button type="submit" className="primary" disabled={!built.search || busy}>Search</button>
          <code className="cmd" aria-label="Equivalent CLI command">{cliCommand(form)}</code>
        </div>
      </form>
      <ErrorNote error={errorField ? null : error} />
      {created && <p role="status" className="notice">{created}</p>}
      {offers && (
        <div className="table-wrap" tabIndex={0} role="region" aria-label="Offers table, scrollable">
          <table aria-busy={busy}>
            <caption className="muted">{counted(offers.length, 'offer')}{busy ? ' (searching…)' : ''}</caption>
            <thead>
              <tr>
                {COLUMNS.map((c) => (
                  <th key={c.field} scope="col" aria-sort={sortOf(applied.order, c.field)}>
                    <button type="button" onClick={() => sortBy(c.field)}>
                      {c.header} <span aria-hidden="true">{{ ascending: '▲', descending: '▼', none: '' }[sortOf(applied.order, c.field)]}</span>
                    </button>
                  </th>
                ))}
                <th scope="col"><span className="muted">Action</span></th>
              </tr>
            </thead>
            <tbody>
              {offers.map((o) => (
                <tr key={o.id}>
                  {COLUMNS.map((c) => <td key={c.field}>{c.cell(o)}</td>)}
                  <td><button type="button" className="small" aria-label={`Rent offer ${o.id}`} onClick={() => setRenting(o)}>Rent</button></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {renting && (
        <RentDialog
          offer={renting}
          bid={applied.type === 'bid'}
          onClose={() => setRenting(null)}
          onRented={(id) => {
            setRenting(null);
            setCreated(`Instance ${id} created.`);
            navigate(`/instances?created=${id}`);
          }}
        />
      )}
    </section>
  );
}

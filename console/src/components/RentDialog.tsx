/** The rent dialog: template, image, disk, env and ports, onstart (with the spec's limit), bid price. */
import { useEffect, useState, type FormEvent } from 'react';
import { api, errorText } from '../lib/api.js';
import { DEFAULT_DISK_GB, ONSTART_LIMIT, parseEnvString, rentBody, type EnvRow, type PortRow, type RentErrors, type RentForm } from '../lib/rent.js';
import { ErrorNote, Field } from './Field.js';
import { Modal } from './Modal.js';

type Template = Awaited<ReturnType<typeof api.templates.search>>['templates'][number];

export function RentDialog({ offer, bid, onClose, onRented }: {
  offer: { id: number; gpu_name: unknown; num_gpus: unknown; dph_total: unknown; min_bid?: unknown };
  bid: boolean;
  onClose(): void;
  onRented(instanceId: number): void;
}) {
  const [templates, setTemplates] = useState<Template[]>([]);
  const [form, setForm] = useState<RentForm>({
    templateHashId: '', image: '', disk: String(DEFAULT_DISK_GB), env: [], ports: [], onstart: '', label: '',
    price: bid ? String(offer.min_bid ?? '') : '',
  });
  const [errors, setErrors] = useState<RentErrors>({});
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    api.templates.search().then((r) => setTemplates(r.templates)).catch(() => setTemplates([]));
  }, []);

  // A field's error goes when the field changes (it is checked again on Rent).
  const set = <K extends keyof RentForm>(k: K, v: RentForm[K]) => {
    setForm((f) => ({ ...f, [k]: v }));
    setErrors((e) => ({ ...e, [k]: undefined }));
  };
  const pickTemplate = (hash: string) => {
    const t = templates.find((x) => x.hash_id === hash);
    if (!t) return set('templateHashId', '');
    const rows = parseEnvString(t.env ?? '');
    setForm((f) => ({ ...f, templateHashId: hash, image: t.image, disk: String(t.recommended_disk_space || DEFAULT_DISK_GB), onstart: t.onstart ?? '', env: rows.env, ports: rows.ports }));
  };
  const setEnv = (i: number, row: Partial<EnvRow>) => set('env', form.env.map((r, j) => (j === i ? { ...r, ...row } : r)));
  const setPort = (i: number, row: Partial<PortRow>) => set('ports', form.ports.map((r, j) => (j === i ? { ...r, ...row } : r)));

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = rentBody(form, bid);
    setErrors(r.errors ?? {});
    if (!r.body) return;
    setBusy(true);
    setError(null);
    try {
      const res = await api.instances.create(offer.id, r.body as Parameters<typeof api.instances.create>[1]);
      onRented(res.new_contract);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal title={`Rent offer ${offer.id}: ${offer.num_gpus}× ${offer.gpu_name}`} open onClose={onClose}>
      <form onSubmit={submit} noValidate>
        <div className="field">
          <label htmlFor="rent-template">Template</label>
          <select id="rent-template" value={form.templateHashId} onChange={(e) => pickTemplate(e.target.value)}>
            <option value="">None</option>
            {templates.map((t) => <option key={t.hash_id} value={t.hash_id}>{t.name} ({t.image})</option>)}
          </select>
        </div>
        <Field label="Image" placeholder="pytorch/pytorch:latest" value={form.image} error={errors.image} onChange={(e) => set('image', e.target.value)} />
        <Field label="Disk (GB)" inputMode="decimal" value={form.disk} error={errors.disk} onChange={(e) => set('disk', e.target.value)} />
        <Field label="Label" value={form.label} onChange={(e) => set('label', e.target.value)} />
        <fieldset>
          <legend>Environment variables</legend>
          {form.env.map((r, i) => (
            <div className="actions" key={i}>
              <input aria-label={`Variable ${i + 1} name`} value={r.key} onChange={(e) => setEnv(i, { key: e.target.value })} />
              <input aria-label={`Variable ${i + 1} value`} value={r.value} onChange={(e) => setEnv(i, { value: e.target.value })} />
              <button type="button" className="small" aria-label={`Remove variable ${i + 1}`} onClick={() => set('env', form.env.filter((_, j) => j !== i))}>Remove</button>
            </div>
          ))}
          <button type="button" className="small" onClick={() => set('env', [...form.env, { key: '', value: '' }])}>Add variable</button>
          <ErrorNote error={errors.env} />
        </fieldset>
        <fieldset>
          <legend>Ports</legend>
          {form.ports.map((p, i) => (
            <div className="actions" key={i}>
              <input aria-label={`Port ${i + 1} host`} inputMode="numeric" value={p.host} onChange={(e) => setPort(i, { host: e.target.value })} />
              <input aria-label={`Port ${i + 1} container`} inputMode="numeric" value={p.container} onChange={(e) => setPort(i, { container: e.target.value })} />
              <select aria-label={`Port ${i + 1} protocol`} value={p.proto} onChange={(e) => setPort(i, { proto: e.target.value as 'tcp' | 'udp' })}>
                <option value="tcp">tcp</option>
                <option value="udp">udp</option>
              </select>
              <button type="button" className="small" aria-label={`Remove port ${i + 1}`} onClick={() => set('ports', form.ports.filter((_, j) => j !== i))}>Remove</button>
            </div>
          ))}
          <button type="button" className="small" onClick={() => set('ports', [...form.ports, { host: '', container: '', proto: 'tcp' }])}>Add port</button>
          <ErrorNote error={errors.ports} />
        </fieldset>
        <div className="field">
          <label htmlFor="rent-onstart">On-start script</label>
          <textarea id="rent-onstart" rows={4} value={form.onstart} aria-describedby="rent-onstart-count" aria-invalid={errors.onstart ? true : undefined}
            onChange={(e) => set('onstart', e.target.value)} />
          <small id="rent-onstart-count" className={form.onstart.length > ONSTART_LIMIT ? 'error' : 'muted'}>
            {form.onstart.length} / {ONSTART_LIMIT} characters{form.onstart.length > ONSTART_LIMIT ? ' — too long' : ''}
          </small>
          <ErrorNote error={errors.onstart} />
        </div>
        {bid && <Field label="Bid price ($/hr)" inputMode="decimal" value={form.price} error={errors.price} onChange={(e) => set('price', e.target.value)} />}
        <p className="muted">Price: ${Number(offer.dph_total).toFixed(4)}/hr{bid ? ' on demand; your bid is what you pay while it holds' : ''}.</p>
        <ErrorNote error={error} />
        <div className="actions">
          <button type="button" onClick={onClose}>Cancel</button>
          <button type="submit" className="primary" disabled={busy}>Rent</button>
        </div>
      </form>
    </Modal>
  );
}

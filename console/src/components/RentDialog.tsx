/**
 * The rent dialog: template, image, launch mode (SSH or Jupyter, proxy or direct, or a command: issue 32) and the
 * fields that mode takes (onstart with the spec's limit; JupyterLab and Jupyter's directory; the command's arguments),
 * disk, env and ports, bid price. Every field is labelled and reached by the keyboard; an error sits beside its field.
 */
import { useEffect, useId, useState, type FormEvent } from 'react';
import { api, errorText } from '../lib/api.js';
import {
  argsWords, DEFAULT_DISK_GB, emptyForm, isJupyterMode, LAUNCH_MODES, ONSTART_LIMIT, parseEnvString, rentBody, templateMode,
  type EnvRow, type LaunchMode, type PortRow, type RentErrors, type RentForm,
} from '../lib/rent.js';
import { ErrorNote, Field } from './Field.js';
import { Modal } from './Modal.js';

type Template = Awaited<ReturnType<typeof api.templates.search>>['templates'][number];

export function RentDialog({ offer, bid, onClose, onRented }: {
  offer: { id: number; gpu_name: unknown; num_gpus: unknown; dph_total: unknown; min_bid?: unknown; direct_port_count?: unknown };
  bid: boolean;
  onClose(): void;
  onRented(instanceId: number): void;
}) {
  const [templates, setTemplates] = useState<Template[]>([]);
  const [form, setForm] = useState<RentForm>(() => emptyForm(bid ? String(offer.min_bid ?? '') : ''));
  const ids = useId();
  const directPorts = typeof offer.direct_port_count === 'number' ? offer.direct_port_count : undefined;
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
    // The template's launch mode and its fields too: the dialog sends the mode it shows, which overrides the template's.
    setForm((f) => ({
      ...f, templateHashId: hash, image: t.image, disk: String(t.recommended_disk_space || DEFAULT_DISK_GB), onstart: t.onstart ?? '', env: rows.env,
      ports: rows.ports, mode: templateMode(t), jupyterLab: t.use_jupyter_lab === true, jupyterDir: t.jupyter_dir ?? '', args: t.args_str ?? '',
    }));
    setErrors({});
  };
  const setEnv = (i: number, row: Partial<EnvRow>) => set('env', form.env.map((r, j) => (j === i ? { ...r, ...row } : r)));
  const setPort = (i: number, row: Partial<PortRow>) => set('ports', form.ports.map((r, j) => (j === i ? { ...r, ...row } : r)));

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = rentBody(form, bid, directPorts);
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
        <fieldset aria-describedby={errors.mode ? `${ids}-mode-err` : undefined}>
          <legend>Launch mode</legend>
          {LAUNCH_MODES.map((m) => (
            // The hint sits beside the label, not in it: a control's name is the mode's name alone.
            <div key={m.value} className="radio">
              <label>
                <input type="radio" name={`${ids}-mode`} value={m.value} checked={form.mode === m.value} aria-describedby={`${ids}-mode-${m.value}`}
                  onChange={() => set('mode', m.value as LaunchMode)} /> {m.label}
              </label>{' '}
              <small id={`${ids}-mode-${m.value}`} className="muted">{m.hint}</small>
            </div>
          ))}
          {errors.mode && <p id={`${ids}-mode-err`} className="error" role="alert">⚠ {errors.mode}</p>}
        </fieldset>
        {form.mode === 'args' ? (
          <div className="field">
            <label htmlFor={`${ids}-args`}>Arguments</label>
            <input id={`${ids}-args`} placeholder="python train.py --epochs 3" value={form.args} aria-invalid={errors.args ? true : undefined}
              aria-describedby={`${ids}-args-hint${errors.args ? ` ${ids}-args-err` : ''}`} onChange={(e) => set('args', e.target.value)} />
            <small id={`${ids}-args-hint`} className="muted">
              {form.args.trim() === ''
                ? "Empty: the image's own command runs. Given: passed to the image's entrypoint, or run in place of its command (quote words as in a shell)."
                : `The container gets ${argsWords(form.args).length} argument${argsWords(form.args).length === 1 ? '' : 's'}: ${argsWords(form.args).map((w) => `[${w}]`).join(' ')}`}
            </small>
            {errors.args && <p id={`${ids}-args-err`} className="error" role="alert">⚠ {errors.args}</p>}
          </div>
        ) : (
          <div className="field">
            <label htmlFor="rent-onstart">On-start script</label>
            <textarea id="rent-onstart" rows={4} value={form.onstart} aria-describedby="rent-onstart-count" aria-invalid={errors.onstart ? true : undefined}
              onChange={(e) => set('onstart', e.target.value)} />
            <small id="rent-onstart-count" className={form.onstart.length > ONSTART_LIMIT ? 'error' : 'muted'}>
              {form.onstart.length} / {ONSTART_LIMIT} characters{form.onstart.length > ONSTART_LIMIT ? ' — too long' : ''}
            </small>
            <ErrorNote error={errors.onstart} />
          </div>
        )}
        {isJupyterMode(form.mode) && (
          <>
            <label className="check">
              <input type="checkbox" checked={form.jupyterLab} onChange={(e) => set('jupyterLab', e.target.checked)} /> Use JupyterLab (instead of Jupyter Notebook)
            </label>
            <Field label="Jupyter directory" placeholder="/workspace" value={form.jupyterDir} error={errors.jupyterDir}
              hint="Where Jupyter starts; empty: the image's working directory." onChange={(e) => set('jupyterDir', e.target.value)} />
          </>
        )}
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

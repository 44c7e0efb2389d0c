/**
 * Templates (issue 15) and, as sub-pages reachable by links, SSH keys, environment variables, volumes, and serverless
 * endpoints with their workergroups and the autoscaler's decisions (src/serverless/serverless-autoscaler.ts writes
 * them: each run's load, target, action and reason).
 */
import { useState, type FormEvent } from 'react';
import { api } from '../lib/api.js';
import { Link, useLocation } from '../lib/router.js';
import { useSession } from '../lib/session.js';
import { dollars, utcTime } from '../lib/format.js';
import { ErrorNote, Field } from '../components/Field.js';
import { Confirm } from '../components/Modal.js';
import { CopyButton } from '../components/CopyButton.js';
import { useAction, useLoad } from '../components/useLoad.js';

const TABS = [
  { path: '/templates', text: 'Templates' },
  { path: '/templates/ssh-keys', text: 'SSH keys' },
  { path: '/templates/env', text: 'Environment variables' },
  { path: '/templates/volumes', text: 'Volumes' },
  { path: '/templates/serverless', text: 'Serverless' },
];

/** A delete button with its confirmation and its error beside it. */
function DeleteButton({ what, onDelete }: { what: string; onDelete(): Promise<unknown> }) {
  const [open, setOpen] = useState(false);
  const act = useAction();
  return (
    <>
      <button type="button" className="small danger" aria-label={`Delete ${what}`} onClick={() => setOpen(true)}>Delete</button>
      <ErrorNote error={act.error} />
      <Confirm open={open} title={`Delete ${what}`} message={`Delete ${what}? This cannot be undone.`} action="Delete" busy={act.busy}
        onClose={() => setOpen(false)} onConfirm={async () => { setOpen(false); await act.run(onDelete); }} />
    </>
  );
}

type Template = Awaited<ReturnType<typeof api.templates.search>>['templates'][number];

const EMPTY_TEMPLATE = { name: '', image: '', tag: 'latest', env: '', onstart: '', runtype: 'ssh' as 'ssh' | 'jupyter' | 'args', disk: '16', priv: true };

function TemplatesTab() {
  const { user } = useSession();
  const [mineOnly, setMineOnly] = useState(true);
  const list = useLoad(() => api.templates.search().then((r) => r.templates));
  const [editing, setEditing] = useState<Template | null>(null);
  const [form, setForm] = useState(EMPTY_TEMPLATE);
  const [nameErr, setNameErr] = useState<string | null>(null);
  const save = useAction();
  const shown = (list.data ?? []).filter((t) => !mineOnly || t.creator_id === user?.id);

  const edit = (t: Template | null) => {
    setEditing(t);
    save.clear();
    setForm(t ? { name: t.name, image: t.image, tag: t.tag, env: t.env, onstart: t.onstart, runtype: (t.runtype as 'ssh') || 'ssh', disk: String(t.recommended_disk_space), priv: t.private } : EMPTY_TEMPLATE);
  };
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!form.name.trim()) return setNameErr('Give the template a name.');
    setNameErr(null);
    const body = { name: form.name.trim(), image: form.image.trim(), tag: form.tag.trim() || null, env: form.env, onstart: form.onstart, runtype: form.runtype, recommended_disk_space: form.disk, private: form.priv };
    const r = await save.run(() => (editing ? api.templates.update({ hash_id: editing.hash_id, ...body }) : api.templates.create(body)));
    if (r) { edit(null); await list.reload(); }
  };
  const set = (k: keyof typeof form) => (e: { target: { value: string } }) => setForm((f) => ({ ...f, [k]: e.target.value }));

  return (
    <>
      <h2>{editing ? `Edit template ${editing.name}` : 'Create a template'}</h2>
      <form onSubmit={submit} aria-label={editing ? 'Edit template' : 'Create a template'}>
        <div className="grid2">
          <Field label="Template name" value={form.name} maxLength={200} onChange={set('name')} error={nameErr} />
          <Field label="Image" value={form.image} maxLength={1024} placeholder="pytorch/pytorch" onChange={set('image')} />
          <Field label="Tag" value={form.tag} maxLength={200} onChange={set('tag')} />
          <Field label="Recommended disk (GB)" inputMode="decimal" value={form.disk} onChange={set('disk')} />
          <div className="field">
            <label htmlFor="tpl-runtype">Launch mode</label>
            <select id="tpl-runtype" value={form.runtype} onChange={set('runtype')}>
              <option value="ssh">SSH</option><option value="jupyter">Jupyter</option><option value="args">Entrypoint arguments</option>
            </select>
          </div>
          <label className="check"><input type="checkbox" checked={form.priv} onChange={(e) => setForm((f) => ({ ...f, priv: e.target.checked }))} /> Private (only you can use it)</label>
        </div>
        <div className="field"><label htmlFor="tpl-env">Docker options and environment</label><textarea id="tpl-env" rows={2} value={form.env} onChange={set('env')} placeholder="-e KEY=value -p 8080:8080" /></div>
        <div className="field"><label htmlFor="tpl-onstart">On-start script</label><textarea id="tpl-onstart" rows={3} value={form.onstart} onChange={set('onstart')} /></div>
        <ErrorNote error={save.error} />
        <div className="actions">
          <button type="submit" className="primary" disabled={save.busy}>{editing ? 'Save template' : 'Create template'}</button>
          {editing && <button type="button" onClick={() => edit(null)}>Cancel editing</button>}
        </div>
      </form>

      <h2>Templates</h2>
      <label className="check"><input type="checkbox" checked={mineOnly} onChange={(e) => setMineOnly(e.target.checked)} /> Only mine</label>
      <ErrorNote error={list.error} />
      {list.data && shown.length === 0 && <p>No templates{mineOnly ? ' of yours yet' : ''}.</p>}
      {shown.length > 0 && (
        <div className="table-wrap">
          <table aria-label="Templates">
            <thead><tr><th scope="col">Name</th><th scope="col">Image</th><th scope="col">Mode</th><th scope="col">Disk</th><th scope="col">Visibility</th><th scope="col">Hash</th><th scope="col"><span className="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {shown.map((t) => (
                <tr key={t.id}>
                  <td>{t.name}</td><td>{t.image}:{t.tag}</td><td>{t.runtype}</td><td>{t.recommended_disk_space} GB</td>
                  <td>{t.private ? 'Private' : 'Public'}</td>
                  <td><code>{t.hash_id.slice(0, 10)}</code> <CopyButton text={t.hash_id} label={`Copy the hash of ${t.name}`} /></td>
                  <td>
                    {t.creator_id === user?.id && (
                      <div className="actions">
                        <button type="button" className="small" aria-label={`Edit ${t.name}`} onClick={() => edit(t)}>Edit</button>
                        <DeleteButton what={`template ${t.name}`} onDelete={async () => { await api.templates.remove({ hash_id: t.hash_id }); await list.reload(); }} />
                      </div>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

function SshKeysTab() {
  const list = useLoad(() => api.sshKeys.list());
  const [key, setKey] = useState('');
  const add = useAction();
  const rows = list.data ?? [];
  return (
    <>
      <h2>SSH keys</h2>
      <p>Public keys put on your new instances, so you can log in with <code>ssh</code>.</p>
      <form onSubmit={async (e) => { e.preventDefault(); if (await add.run(() => api.sshKeys.create(key.trim()))) { setKey(''); await list.reload(); } }}>
        <div className="field"><label htmlFor="ssh-key">Public key</label><textarea id="ssh-key" rows={3} value={key} onChange={(e) => setKey(e.target.value)} placeholder="ssh-ed25519 AAAA… you@laptop" aria-invalid={add.error ? true : undefined} /></div>
        <ErrorNote error={add.error} />
        <button type="submit" className="primary" disabled={add.busy}>Add SSH key</button>
      </form>
      <ErrorNote error={list.error} />
      {list.data && rows.length === 0 && <p>No SSH keys yet.</p>}
      {rows.length > 0 && (
        <ul>
          {rows.map((k) => {
            const text = k.ssh_key;
            return <li key={k.id}><code className="cmd">{text.length > 60 ? `${text.slice(0, 40)}…${text.slice(-16)}` : text}</code> <DeleteButton what={`SSH key ${k.id}`} onDelete={async () => { await api.sshKeys.remove(k.id); await list.reload(); }} /></li>;
          })}
        </ul>
      )}
    </>
  );
}

function EnvTab() {
  const list = useLoad(() => api.envVars.list());
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const [shown, setShown] = useState<Set<string>>(new Set());
  const save = useAction();
  const exists = list.data ? Object.hasOwn(list.data, name.trim()) : false;
  return (
    <>
      <h2>Environment variables</h2>
      <p>Set in every new instance of yours. Values are stored encrypted and shown only to you.</p>
      <form className="row-form" onSubmit={async (e) => {
        e.preventDefault();
        const k = name.trim();
        if (await save.run(() => (exists ? api.envVars.update(k, value) : api.envVars.create(k, value)))) { setName(''); setValue(''); await list.reload(); }
      }}>
        <Field label="Variable name" value={name} onChange={(e) => setName(e.target.value)} placeholder="HF_TOKEN" />
        <Field label="Value" type="password" autoComplete="off" value={value} onChange={(e) => setValue(e.target.value)} />
        <div className="field"><button type="submit" className="primary" disabled={save.busy}>{exists ? 'Update variable' : 'Add variable'}</button></div>
      </form>
      <ErrorNote error={save.error} />
      <ErrorNote error={list.error} />
      {list.data && Object.keys(list.data).length === 0 && <p>No variables yet.</p>}
      {list.data && Object.keys(list.data).length > 0 && (
        <div className="table-wrap">
          <table aria-label="Environment variables">
            <thead><tr><th scope="col">Name</th><th scope="col">Value</th><th scope="col"><span className="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {Object.entries(list.data).map(([k, v]) => (
                <tr key={k}>
                  <td><code>{k}</code></td>
                  <td>{shown.has(k) ? <code>{String(v)}</code> : <span aria-label="hidden value">••••••</span>}</td>
                  <td>
                    <div className="actions">
                      <button type="button" className="small" aria-pressed={shown.has(k)} aria-label={`Show the value of ${k}`}
                        onClick={() => setShown((s) => { const n = new Set(s); if (n.has(k)) n.delete(k); else n.add(k); return n; })}>Show</button>
                      <button type="button" className="small" aria-label={`Edit ${k}`} onClick={() => { setName(k); setValue(String(v)); }}>Edit</button>
                      <DeleteButton what={`variable ${k}`} onDelete={async () => { await api.envVars.remove(k); await list.reload(); }} />
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

function VolumesTab() {
  const list = useLoad(() => api.volumes.list().then((r) => r.volumes));
  const offers = useLoad(() => api.volumes.search({ limit: 20 }).then((r) => r.offers as unknown as { id: number; disk_space: number; storage_cost: number; geolocation: string | null; machine_id: number }[]));
  const [offer, setOffer] = useState('');
  const [size, setSize] = useState('10');
  const [name, setName] = useState('');
  const create = useAction();
  return (
    <>
      <h2>Volumes</h2>
      <p>Disks that outlive an instance, on one machine.</p>
      <form onSubmit={async (e) => {
        e.preventDefault();
        if (await create.run(() => api.volumes.create({ id: Number(offer), size: Number(size), name: name.trim() || null }))) { setName(''); await list.reload(); }
      }}>
        <div className="grid2">
          <div className="field">
            <label htmlFor="vol-offer">Volume offer</label>
            <select id="vol-offer" value={offer} onChange={(e) => setOffer(e.target.value)} required>
              <option value="">Choose an offer</option>
              {offers.data?.map((o) => <option key={o.id} value={o.id}>#{o.id}: machine {o.machine_id}, {Math.floor(o.disk_space)} GB free, {o.geolocation ?? 'unknown location'}, {dollars(o.storage_cost)}/GB/month</option>)}
            </select>
            <ErrorNote error={offers.error} />
          </div>
          <Field label="Size (GB)" inputMode="decimal" value={size} onChange={(e) => setSize(e.target.value)} />
          <Field label="Volume name" value={name} maxLength={128} onChange={(e) => setName(e.target.value)} />
        </div>
        <ErrorNote error={create.error} />
        <button type="submit" className="primary" disabled={create.busy}>Create volume</button>
      </form>
      <ErrorNote error={list.error} />
      {list.data && list.data.length === 0 && <p>No volumes yet.</p>}
      {list.data && list.data.length > 0 && (
        <div className="table-wrap">
          <table aria-label="Volumes">
            <thead><tr><th scope="col">ID</th><th scope="col">Name</th><th scope="col">Size</th><th scope="col">Machine</th><th scope="col">Status</th><th scope="col">Cost</th><th scope="col"><span className="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {list.data.map((v) => (
                <tr key={v.id}>
                  <td>{v.id}</td><td>{v.name ?? '—'}</td><td>{v.size} GB</td><td>{v.machine_id}</td>
                  <td>{v.status === 'in_use' ? `In use by ${v.instances.join(', ')}` : 'Ready'}</td>
                  <td>{dollars(v.storage_cost)}/GB/month</td>
                  <td><DeleteButton what={`volume ${v.name ?? v.id}`} onDelete={async () => { await api.volumes.remove(v.id); await list.reload(); }} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

function Decisions({ workergroupId }: { workergroupId: number }) {
  const d = useLoad(() => api.serverless.decisions(workergroupId).then((r) => r.decisions));
  return (
    <div>
      <ErrorNote error={d.error} />
      {d.data && d.data.length === 0 && <p>The autoscaler has not run for this workergroup yet.</p>}
      {d.data && d.data.length > 0 && (
        <div className="table-wrap">
          <table aria-label={`Autoscaler decisions of workergroup ${workergroupId}`}>
            <thead><tr><th scope="col">When</th><th scope="col">Load</th><th scope="col">Workers</th><th scope="col">Target</th><th scope="col">Action</th><th scope="col">Reason</th><th scope="col">Instances</th></tr></thead>
            <tbody>
              {d.data.slice(0, 50).map((x) => (
                <tr key={x.id}>
                  <td>{utcTime(x.at)}</td><td>{x.load}</td><td>{x.workers_before}</td><td>{x.target}</td>
                  <td>{x.action.replace('_', ' ')}</td><td className="wrap">{x.reason}</td><td>{x.instances.join(', ') || '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <button type="button" className="small" onClick={() => d.reload()}>Refresh decisions</button>
    </div>
  );
}

function ServerlessTab() {
  const endpoints = useLoad(() => api.serverless.endpoints().then((r) => r.results));
  const groups = useLoad(() => api.serverless.workergroups().then((r) => r.results));
  const templates = useLoad(() => api.templates.search().then((r) => r.templates));
  const [ep, setEp] = useState({ name: '', min_load: '10', target_util: '0.9', cold_workers: '5', max_workers: '20' });
  const [wg, setWg] = useState({ endpoint: '', template: '', search: 'verified=True rentable=True', gpu_ram: '' });
  const [openDecisions, setOpenDecisions] = useState<Set<number>>(new Set());
  const createEp = useAction();
  const createWg = useAction();
  const num = (s: string) => (s.trim() === '' ? undefined : Number(s));
  return (
    <>
      <h2>Serverless endpoints</h2>
      <form onSubmit={async (e) => {
        e.preventDefault();
        const r = await createEp.run(() => api.serverless.createEndpoint({ endpoint_name: ep.name.trim() || undefined, min_load: num(ep.min_load), target_util: num(ep.target_util), cold_workers: num(ep.cold_workers), max_workers: num(ep.max_workers) }));
        if (r) { setEp((x) => ({ ...x, name: '' })); await endpoints.reload(); }
      }}>
        <div className="grid2">
          <Field label="Endpoint name" value={ep.name} maxLength={128} onChange={(e) => setEp({ ...ep, name: e.target.value })} placeholder="default-endpoint" />
          <Field label="Minimum load" inputMode="decimal" value={ep.min_load} onChange={(e) => setEp({ ...ep, min_load: e.target.value })} />
          <Field label="Target utilization" inputMode="decimal" value={ep.target_util} onChange={(e) => setEp({ ...ep, target_util: e.target.value })} />
          <Field label="Cold workers" inputMode="numeric" value={ep.cold_workers} onChange={(e) => setEp({ ...ep, cold_workers: e.target.value })} />
          <Field label="Maximum workers" inputMode="numeric" value={ep.max_workers} onChange={(e) => setEp({ ...ep, max_workers: e.target.value })} />
        </div>
        <ErrorNote error={createEp.error} />
        <button type="submit" className="primary" disabled={createEp.busy}>Create endpoint</button>
      </form>
      <ErrorNote error={endpoints.error} />
      {endpoints.data && endpoints.data.length === 0 && <p>No endpoints yet.</p>}
      {endpoints.data && endpoints.data.length > 0 && (
        <div className="table-wrap">
          <table aria-label="Endpoints">
            <thead><tr><th scope="col">ID</th><th scope="col">Name</th><th scope="col">Load</th><th scope="col">Workers</th><th scope="col">Min load</th><th scope="col">Target util.</th><th scope="col">Max workers</th><th scope="col"><span className="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {endpoints.data.map((x) => (
                <tr key={x.id}>
                  <td>{x.id}</td><td>{x.endpoint_name}</td><td>{x.load}</td><td>{x.workers}</td><td>{x.min_load}</td><td>{x.target_util}</td><td>{x.max_workers}</td>
                  <td><DeleteButton what={`endpoint ${x.endpoint_name}`} onDelete={async () => { await api.serverless.deleteEndpoint(x.id); await endpoints.reload(); await groups.reload(); }} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}

      <h2>Workergroups</h2>
      <form onSubmit={async (e) => {
        e.preventDefault();
        const r = await createWg.run(() => api.serverless.createWorkergroup({ endpoint_id: num(wg.endpoint), template_hash: wg.template || undefined, search_params: wg.search.trim() || undefined, gpu_ram: num(wg.gpu_ram) }));
        if (r) await groups.reload();
      }}>
        <div className="grid2">
          <div className="field">
            <label htmlFor="wg-endpoint">Endpoint</label>
            <select id="wg-endpoint" value={wg.endpoint} onChange={(e) => setWg({ ...wg, endpoint: e.target.value })}>
              <option value="">Choose an endpoint</option>
              {endpoints.data?.map((x) => <option key={x.id} value={x.id}>{x.endpoint_name} (#{x.id})</option>)}
            </select>
          </div>
          <div className="field">
            <label htmlFor="wg-template">Template</label>
            <select id="wg-template" value={wg.template} onChange={(e) => setWg({ ...wg, template: e.target.value })}>
              <option value="">Choose a template</option>
              {templates.data?.map((t) => <option key={t.id} value={t.hash_id}>{t.name} ({t.image})</option>)}
            </select>
          </div>
          <Field label="Offer search" value={wg.search} onChange={(e) => setWg({ ...wg, search: e.target.value })} hint="As the CLI's search: gpu_name=RTX_4090 num_gpus=1" />
          <Field label="GPU memory (GB)" inputMode="decimal" value={wg.gpu_ram} onChange={(e) => setWg({ ...wg, gpu_ram: e.target.value })} />
        </div>
        <ErrorNote error={createWg.error} />
        <button type="submit" className="primary" disabled={createWg.busy}>Create workergroup</button>
      </form>
      <ErrorNote error={groups.error} />
      {groups.data && groups.data.length === 0 && <p>No workergroups yet.</p>}
      {groups.data?.map((g) => (
        <article key={g.id} className="card" aria-labelledby={`wg-${g.id}`}>
          <h3 id={`wg-${g.id}`}>Workergroup {g.id} of {g.endpoint_name ?? `endpoint ${g.endpoint_id}`}</h3>
          <p>
            Search: <code>{g.search_params}</code> · workers: {g.workers.length ? g.workers.join(', ') : 'none'}
            {g.effective && <> · in effect: min load {g.effective.min_load}, target {g.effective.target_util}, cold {g.effective.cold_workers}, max {g.effective.max_workers}</>}
          </p>
          <div className="actions">
            <button type="button" className="small" aria-expanded={openDecisions.has(g.id)} onClick={() => setOpenDecisions((s) => { const n = new Set(s); if (n.has(g.id)) n.delete(g.id); else n.add(g.id); return n; })}>
              {openDecisions.has(g.id) ? 'Hide' : 'Show'} autoscaler decisions
            </button>
            <DeleteButton what={`workergroup ${g.id}`} onDelete={async () => { await api.serverless.deleteWorkergroup(g.id); await groups.reload(); }} />
          </div>
          {openDecisions.has(g.id) && <Decisions workergroupId={g.id} />}
        </article>
      ))}
    </>
  );
}

export default function TemplatesPage() {
  const { path } = useLocation();
  const tab = TABS.find((t) => t.path === path) ?? TABS[0]!;
  return (
    <section>
      <h1>{tab.path === '/templates' ? 'Templates' : `Templates: ${tab.text}`}</h1>
      <nav className="tabs" aria-label="Templates and resources">
        <ul>{TABS.map((t) => <li key={t.path}><Link to={t.path} aria-current={t.path === tab.path ? 'page' : undefined}>{t.text}</Link></li>)}</ul>
      </nav>
      {tab.path === '/templates' && <TemplatesTab />}
      {tab.path === '/templates/ssh-keys' && <SshKeysTab />}
      {tab.path === '/templates/env' && <EnvTab />}
      {tab.path === '/templates/volumes' && <VolumesTab />}
      {tab.path === '/templates/serverless' && <ServerlessTab />}
    </section>
  );
}


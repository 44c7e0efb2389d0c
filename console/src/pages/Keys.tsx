/**
 * Keys (issue 15): API keys — create one (its secret is shown once, with a copy button), choose its permission
 * categories as checkboxes (spec: Authentication; a console key has full access by default), revoke.
 */
import { useState, type FormEvent } from 'react';
import { api } from '../lib/api.js';
import { CATEGORIES, describeCategory, describeGrant, permissionDoc } from '../lib/permissions.js';
import { utcTime } from '../lib/format.js';
import { ErrorNote, Field } from '../components/Field.js';
import { CopyButton } from '../components/CopyButton.js';
import { Confirm } from '../components/Modal.js';
import { useAction, useLoad } from '../components/useLoad.js';

export default function KeysPage() {
  const keys = useLoad(() => api.apiKeys.list().then((r) => r.apikeys));
  const [name, setName] = useState('');
  const [checked, setChecked] = useState<Set<string>>(() => new Set(CATEGORIES));
  const [created, setCreated] = useState<{ name: string | null; key: string } | null>(null);
  const [revoking, setRevoking] = useState<{ id: number; name: string | null } | null>(null);
  const create = useAction();
  const revoke = useAction();

  const toggle = (c: string, on: boolean) => setChecked((s) => { const n = new Set(s); if (on) n.add(c); else n.delete(c); return n; });

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = await create.run(() => api.apiKeys.create({ name: name.trim() || null, permissions: permissionDoc(checked) }));
    if (r) {
      setCreated({ name: r.name, key: r.key });
      setName('');
      await keys.reload();
    }
  };

  return (
    <section>
      <h1>Keys</h1>
      <p>API keys let the CLI, the SDK and scripts act as you. A key's secret is shown once, when it is created.</p>

      <h2>Create a key</h2>
      <form onSubmit={submit} aria-label="Create a key">
        <Field label="Key name" value={name} maxLength={100} onChange={(e) => setName(e.target.value)} hint="Optional; helps you tell keys apart." />
        <fieldset>
          <legend>Permissions</legend>
          <div className="actions">
            <button type="button" className="small" onClick={() => setChecked(new Set(CATEGORIES))}>Select all</button>
            <button type="button" className="small" onClick={() => setChecked(new Set())}>Clear all</button>
          </div>
          {CATEGORIES.map((c) => (
            <label key={c} className="check">
              <input type="checkbox" checked={checked.has(c)} onChange={(e) => toggle(c, e.target.checked)} /> <code>{c}</code> — {describeCategory(c)}
            </label>
          ))}
        </fieldset>
        <ErrorNote error={create.error} />
        <button type="submit" className="primary" disabled={create.busy}>Create key</button>
      </form>

      {created && (
        <div className="notice" role="status" aria-label="New key">
          <p><strong>Key {created.name ? `"${created.name}" ` : ''}created.</strong> Copy it now: it will not be shown again.</p>
          <p><code className="cmd" aria-label="New key secret">{created.key}</code> <CopyButton text={created.key} label="Copy the new key" /></p>
          <button type="button" className="small" onClick={() => setCreated(null)}>I have copied it</button>
        </div>
      )}

      <h2>Your keys</h2>
      <ErrorNote error={keys.error} />
      <ErrorNote error={revoke.error} />
      {keys.data && keys.data.length === 0 && <p>No keys yet.</p>}
      {keys.data && keys.data.length > 0 && (
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Your API keys</caption>
            <thead><tr><th scope="col">Name</th><th scope="col">ID</th><th scope="col">Permissions</th><th scope="col">Team</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col"><span className="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {keys.data.map((k) => (
                <tr key={k.id}>
                  <td>{k.name ?? <span className="muted">(no name)</span>}</td>
                  <td>{k.id}</td>
                  <td className="wrap">{describeGrant(k.permissions)}</td>
                  <td>{k.team_id ?? '—'}</td>
                  <td>{utcTime(k.created_at)}</td>
                  <td>{utcTime(k.last_used_at)}</td>
                  <td><button type="button" className="small danger" aria-label={`Revoke key ${k.name ?? k.id}`} onClick={() => setRevoking({ id: k.id, name: k.name })}>Revoke</button></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Confirm
        open={revoking !== null}
        title="Revoke key"
        message={`Revoke key ${revoking?.name ?? revoking?.id ?? ''}? Anything using it stops working at once.`}
        action="Revoke"
        busy={revoke.busy}
        onClose={() => setRevoking(null)}
        onConfirm={async () => {
          const id = revoking!.id;
          setRevoking(null);
          if (await revoke.run(() => api.apiKeys.remove(id))) await keys.reload();
        }}
      />
    </section>
  );
}

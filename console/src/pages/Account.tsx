/**
 * Account: who you are, and your sessions (issue 15: sessions can be listed and revoked), with links to the security
 * settings (2FA methods, backup codes, the audit log) and teams pages.
 */
import { useCallback, useEffect, useState } from 'react';
import { api, errorText } from '../lib/api.js';
import { useSession } from '../lib/session.js';
import { ErrorNote } from '../components/Field.js';

type SessionRow = Awaited<ReturnType<typeof api.auth.sessions>>['sessions'][number];
const when = (t: number | null) => (t === null ? '—' : new Date(t * 1000).toISOString().replace('T', ' ').slice(0, 16));

export default function AccountPage() {
  const { user, refresh } = useSession();
  const [sessions, setSessions] = useState<SessionRow[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [rowError, setRowError] = useState<{ id: number; msg: string } | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  const load = useCallback(async () => {
    try {
      setSessions((await api.auth.sessions()).sessions);
    } catch (err) {
      setError(errorText(err));
    }
  }, []);
  useEffect(() => void load(), [load]);

  const revoke = async (s: SessionRow) => {
    setRowError(null);
    try {
      const r = await api.auth.revokeSession(s.id);
      setNotice(r.msg);
      if (s.current) await refresh();
      else await load();
    } catch (err) {
      setRowError({ id: s.id, msg: errorText(err) });
    }
  };

  return (
    <section>
      <h1>Account</h1>
      <nav aria-label="Account sections"><a href="/account/security">Security settings</a> · <a href="/account/teams">Teams</a></nav>
      {user?.restricted && <p>Your role in this team does not let you read the account (it lacks <code>user_read</code>).</p>}
      {user && !user.restricted && (
        <dl>
          <dt>Email</dt><dd>{user.email}{user.email_verified ? ' (verified)' : ' (not verified)'}</dd>
          <dt>Credit</dt><dd>${Number(user.credit).toFixed(2)}</dd>
          <dt>Two-factor authentication</dt><dd>{user.tfa_status}</dd>
        </dl>
      )}
      <h2>Sessions</h2>
      <p className="muted">Where you are signed in: this browser and others, and CLI logins. Sessions end 7 days after they start.</p>
      {notice && <p role="status" className="notice">{notice}</p>}
      <ErrorNote error={error} />
      {sessions && (
        <div className="table-wrap" tabIndex={0} role="region" aria-label="Sessions table, scrollable">
          <table>
            <thead>
              <tr><th scope="col">Session</th><th scope="col">Client</th><th scope="col">Started</th><th scope="col">Last used</th><th scope="col">Ends</th><th scope="col"><span className="muted">Action</span></th></tr>
            </thead>
            <tbody>
              {sessions.map((s) => (
                <tr key={s.id}>
                  <td>{s.id}{s.current ? ' (this one)' : ''}</td>
                  <td>{s.client === 'ui' ? 'browser' : 'CLI'}</td>
                  <td>{when(s.created_at)}</td>
                  <td>{when(s.last_used_at)}</td>
                  <td>{when(s.expires_at)}</td>
                  <td>
                    <button type="button" className="small" aria-label={`End session ${s.id}`} onClick={() => revoke(s)}>End</button>
                    {rowError?.id === s.id && <ErrorNote error={rowError.msg} />}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

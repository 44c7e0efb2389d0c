/**
 * Security settings (issue 15; spec: 2FA endpoints, 2FA time-bound conditions): two-factor methods — add TOTP (QR code
 * drawn from `provisioning_uri`) or an SMS number, remove one, set the primary — backup codes (shown once,
 * downloadable) and the audit log. Adding a method needs the 30-minute authorization window (authorize-new-method):
 * by e-mail code for the first method, else by an existing method or a backup code.
 */
import { useState, type FormEvent, type ReactNode } from 'react';
import { api } from '../lib/api.js';
import { useSession } from '../lib/session.js';
import { utcTime } from '../lib/format.js';
import { backupCodesFile, describeProvisioningUri, normalizeCode, normalizePhone } from '../lib/security.js';
import { ErrorNote, Field } from '../components/Field.js';
import { Modal } from '../components/Modal.js';
import { CopyButton } from '../components/CopyButton.js';
import { QrCode } from '../components/QrCode.js';
import { useAction, useLoad } from '../components/useLoad.js';
import { AccountTabs } from '../components/AccountTabs.js';

type Status = Awaited<ReturnType<typeof api.tfa.status>>;
type Method = Status['methods'][number];
/** The second factor a change is verified with, as the 2FA bodies take it. */
type Factor = { tfa_method: 'sms' | 'totp' | 'email'; code: string; secret?: string; tfa_method_id?: number } | { backup_code: string };

const methodName = (m: Method) => `${m.label} (${m.method === 'totp' ? 'authenticator app' : `SMS ${m.phone_number ?? ''}`})`;

/** One way to give the second factor: a method of the account, an e-mailed code, or a backup code. */
type Choice = { key: string; text: string; m: Method | null };

/**
 * Asks for a second factor among `choices`: a method's code (an SMS or e-mail code is sent first, on request, by
 * `sendVia`) or a backup code, then calls `onFactor` with it. The choice is offered only when there is more than one.
 */
function FactorForm({ choices, name, sendVia, action, busy, error, onFactor }: {
  choices: Choice[];
  /** The radio group's name (unique on the page). */
  name: string;
  sendVia(picked: Choice): Promise<{ secret?: string }>;
  action: string;
  busy: boolean;
  error: string | null;
  onFactor(f: Factor): void;
}) {
  const [choice, setChoice] = useState(choices[0]!.key);
  const [code, setCode] = useState('');
  const [secret, setSecret] = useState<string | undefined>(undefined);
  const [codeErr, setCodeErr] = useState<string | null>(null);
  const send = useAction();
  const picked = choices.find((c) => c.key === choice) ?? choices[0]!;
  const needsSend = picked.key === 'email' || picked.m?.method === 'sms';

  const sendCode = async () => {
    const r = await send.run(() => sendVia(picked));
    if (r?.secret) setSecret(r.secret);
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (picked.key === 'backup') {
      if (!code.trim()) return setCodeErr('Enter a backup code.');
      setCodeErr(null);
      return onFactor({ backup_code: code.trim().toUpperCase() });
    }
    const c = normalizeCode(code);
    if (!c) return setCodeErr('Enter the 6-digit code.');
    if (needsSend && !secret) return setCodeErr('Send a code first.');
    setCodeErr(null);
    onFactor({ tfa_method: picked.key === 'email' ? 'email' : picked.m!.method, code: c, ...(secret ? { secret } : {}), ...(picked.m ? { tfa_method_id: picked.m.id } : {}) });
  };
  return (
    <form onSubmit={submit}>
      {choices.length > 1 && (
        <fieldset>
          <legend>Verify with</legend>
          {choices.map((c) => (
            <label key={c.key} className="radio">
              <input type="radio" name={name} value={c.key} checked={choice === c.key} onChange={() => { setChoice(c.key); setSecret(undefined); setCode(''); }} /> {c.text}
            </label>
          ))}
        </fieldset>
      )}
      {needsSend && (
        <p>
          <button type="button" onClick={sendCode} disabled={send.busy}>{secret ? 'Send another code' : 'Send code'}</button>{' '}
          {secret && <span role="status">Code sent {picked.key === 'email' ? 'to your e-mail address' : 'by SMS'}.</span>}
        </p>
      )}
      <ErrorNote error={send.error} />
      <Field
        label={picked.key === 'backup' ? 'Backup code' : 'Verification code'}
        autoComplete="one-time-code"
        inputMode={picked.key === 'backup' ? 'text' : 'numeric'}
        value={code}
        onChange={(e) => setCode(e.target.value)}
        error={codeErr ?? error}
      />
      <button type="submit" className="primary" disabled={busy}>{action}</button>
    </form>
  );
}

/** A change's verification: an account method, an e-mailed code (when `allowEmail`), or a backup code. */
function Verify({ methods, allowEmail, action, busy, error, onFactor }: {
  methods: Method[];
  allowEmail: boolean;
  action: string;
  busy: boolean;
  error: string | null;
  onFactor(f: Factor): void;
}) {
  const choices: Choice[] = [...methods.map((m) => ({ key: `m${m.id}`, text: methodName(m), m })), ...(allowEmail ? [{ key: 'email', text: 'E-mail code', m: null }] : []), { key: 'backup', text: 'Backup code', m: null }];
  const sendVia = (picked: Choice) => (picked.key === 'email' ? api.tfa.sendEmail({}) : api.tfa.sendSms({ tfa_method_id: picked.m!.id }));
  return <FactorForm choices={choices} name="verify-with" sendVia={sendVia} action={action} busy={busy} error={error} onFactor={onFactor} />;
}

/** Backup codes, shown once: copy, download, and a word that they will not be shown again. */
function BackupCodes({ codes, email, onDone }: { codes: string[]; email: string; onDone(): void }) {
  const download = () => {
    const url = URL.createObjectURL(new Blob([backupCodesFile(email, codes, new Date())], { type: 'text/plain' }));
    const a = document.createElement('a');
    a.href = url;
    a.download = 'gpuplane-backup-codes.txt';
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  };
  return (
    <div className="notice" role="region" aria-label="Backup codes">
      <h3>Your backup codes</h3>
      <p><strong>Save them now: they are shown only once.</strong> Each code signs you in once when you cannot use your other methods.</p>
      <ul className="codes" aria-label="Backup code list">{codes.map((c) => <li key={c}><code>{c}</code></li>)}</ul>
      <div className="actions">
        <button type="button" onClick={download}>Download backup codes</button>
        <CopyButton text={codes.join('\n')} label="Copy the backup codes" />
        <button type="button" onClick={onDone}>I have saved them</button>
      </div>
    </div>
  );
}

/** Adding a method: authorize (if the window is closed), then set up TOTP or SMS and confirm with its first code. */
function AddMethod({ kind, status, onClose, onAdded }: { kind: 'totp' | 'sms'; status: Status; onClose(): void; onAdded(codes: string[] | undefined): void }) {
  const [authorized, setAuthorized] = useState(status.new_method_authorized);
  const auth = useAction();
  const [totp, setTotp] = useState<{ secret: string; provisioning_uri: string } | null>(null);
  const setup = useAction();
  const [phone, setPhone] = useState('');
  const [smsSecret, setSmsSecret] = useState<string | null>(null);
  const [label, setLabel] = useState(kind === 'totp' ? 'Authenticator app' : 'Phone');
  const [code, setCode] = useState('');
  const [fieldErr, setFieldErr] = useState<{ field: 'phone' | 'code'; error: string } | null>(null);
  const confirm = useAction();

  const authorize = async (f: Factor) => {
    const ok = await auth.run(async () => {
      if ('backup_code' in f) return api.tfa.authorizeStart({ backup_code: f.backup_code });
      // SMS and e-mail codes came from authorize-new-method's POST (AuthorizeVerify's "Send code"), with their secret;
      // TOTP sends nothing, so its challenge is started here, just before the code is checked.
      const start = f.tfa_method === 'totp' ? await api.tfa.authorizeStart({ tfa_method: 'totp', tfa_method_id: f.tfa_method_id }) : { secret: f.secret };
      return api.tfa.authorizeFinish({ code: f.code, secret: start.secret });
    });
    if (ok) setAuthorized(true);
  };

  const startTotp = async () => {
    const r = await setup.run(() => api.tfa.totpSetup());
    if (r) setTotp({ secret: r.secret, provisioning_uri: r.provisioning_uri });
  };
  const sendSms = async (e: FormEvent) => {
    e.preventDefault();
    const p = normalizePhone(phone);
    if (!p) return setFieldErr({ field: 'phone', error: 'Enter the number with its country code, e.g. +15550100.' });
    setFieldErr(null);
    const r = await setup.run(() => api.tfa.sendSms({ phone_number: p }));
    if (r) setSmsSecret(r.secret);
  };
  const finish = async (e: FormEvent) => {
    e.preventDefault();
    const c = normalizeCode(code);
    if (!c) return setFieldErr({ field: 'code', error: 'Enter the 6-digit code.' });
    setFieldErr(null);
    const r = await confirm.run(() =>
      kind === 'totp'
        ? api.tfa.confirmNew({ tfa_method: 'totp', code: c, secret: totp!.secret, label: label.trim() || undefined })
        : api.tfa.confirmNew({ tfa_method: 'sms', code: c, secret: smsSecret!, phone_number: normalizePhone(phone)!, label: label.trim() || undefined }),
    );
    if (r) onAdded(r.backup_codes);
  };

  let body: ReactNode;
  if (!authorized) {
    body = (
      <>
        <p>First confirm it is you{status.methods.length === 0 ? ' with a code sent to your e-mail address' : ''}. You then have 30 minutes to add a method.</p>
        <AuthorizeVerify status={status} busy={auth.busy} error={auth.error} onFactor={authorize} />
      </>
    );
  } else if (kind === 'totp') {
    const who = totp ? describeProvisioningUri(totp.provisioning_uri) : null;
    body = !totp ? (
      <>
        <p>Authorized. Next, set up your authenticator app.</p>
        <ErrorNote error={setup.error} />
        <button type="button" className="primary" onClick={startTotp} disabled={setup.busy}>Show QR code</button>
      </>
    ) : (
      <form onSubmit={finish}>
        <p>Scan this code with your authenticator app{who?.account ? ` (it adds ${who.issuer ?? 'gpuplane'}: ${who.account})` : ''}, or type the secret key.</p>
        <QrCode text={totp.provisioning_uri} label="QR code of the authenticator secret" />
        <p>Secret key: <code className="cmd" data-testid="totp-secret">{totp.secret}</code> <CopyButton text={totp.secret} label="Copy the secret key" /></p>
        <Field label="Method name" value={label} maxLength={30} onChange={(e) => setLabel(e.target.value)} />
        <Field label="Code from the app" autoComplete="one-time-code" inputMode="numeric" value={code} onChange={(e) => setCode(e.target.value)} error={fieldErr?.field === 'code' ? fieldErr.error : confirm.error} />
        <button type="submit" className="primary" disabled={confirm.busy}>Add authenticator</button>
      </form>
    );
  } else {
    body = !smsSecret ? (
      <form onSubmit={sendSms}>
        <Field label="Phone number" type="tel" autoComplete="tel" value={phone} onChange={(e) => setPhone(e.target.value)} error={fieldErr?.field === 'phone' ? fieldErr.error : setup.error} hint="With the country code, e.g. +15550100." />
        <button type="submit" className="primary" disabled={setup.busy}>Send code</button>
      </form>
    ) : (
      <form onSubmit={finish}>
        <p role="status">A code was sent to {phone}.</p>
        <Field label="Method name" value={label} maxLength={30} onChange={(e) => setLabel(e.target.value)} />
        <Field label="Code from the SMS" autoComplete="one-time-code" inputMode="numeric" value={code} onChange={(e) => setCode(e.target.value)} error={fieldErr?.field === 'code' ? fieldErr.error : confirm.error} />
        <button type="submit" className="primary" disabled={confirm.busy}>Add phone</button>
      </form>
    );
  }
  return <Modal title={kind === 'totp' ? 'Add an authenticator app' : 'Add an SMS number'} open onClose={onClose}>{body}</Modal>;
}

/**
 * The authorization step's verification: for an SMS or e-mail code the challenge is authorize-new-method's own (its
 * POST sends the code), so sending goes through it rather than through the plain send endpoints.
 */
function AuthorizeVerify({ status, busy, error, onFactor }: { status: Status; busy: boolean; error: string | null; onFactor(f: Factor): void }) {
  const choices: Choice[] = status.methods.length === 0
    ? [{ key: 'email', text: 'E-mail code', m: null }]
    : [...status.methods.map((m) => ({ key: `m${m.id}`, text: methodName(m), m })), { key: 'backup', text: 'Backup code', m: null }];
  const sendVia = (picked: Choice) => api.tfa.authorizeStart(picked.m ? { tfa_method: 'sms', tfa_method_id: picked.m.id } : { tfa_method: 'email' });
  return <FactorForm choices={choices} name="authorize-with" sendVia={sendVia} action="Confirm it is me" busy={busy} error={error} onFactor={onFactor} />;
}

/**
 * A password change (issue 29 item 7): the current password and the new one, and with 2FA on a second factor too,
 * asked for in a dialog once the passwords are typed. The server ends every other session.
 */
function ChangePassword({ status, onChanged }: { status: Status | null; onChanged(msg: string): void }) {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [asking, setAsking] = useState(false);
  const change = useAction();

  const submit = async (f: Factor | null) => {
    const r = await change.run(() => api.auth.changePassword({ current_password: current, new_password: next, ...(f ?? {}) }));
    if (r) {
      setAsking(false);
      setCurrent('');
      setNext('');
      onChanged(r.msg);
    }
  };
  const start = (e: FormEvent) => {
    e.preventDefault();
    change.clear();
    if (status?.tfa_enabled) setAsking(true);
    else void submit(null);
  };
  return (
    <>
      <form onSubmit={start} noValidate aria-label="Change password">
        <Field label="Current password" type="password" autoComplete="current-password" required value={current} onChange={(e) => setCurrent(e.target.value)} />
        <Field label="New password" type="password" autoComplete="new-password" required minLength={8} hint="At least 8 characters. Your other sessions end." value={next} onChange={(e) => setNext(e.target.value)} />
        {!asking && <ErrorNote error={change.error} />}
        <button type="submit" className="primary" disabled={change.busy}>Change password</button>
      </form>
      {asking && status && (
        <Modal title="Change password" open onClose={() => setAsking(false)}>
          <p>Confirm with your second factor.</p>
          <Verify methods={status.methods} allowEmail action="Change password" busy={change.busy} error={change.error} onFactor={(f) => void submit(f)} />
        </Modal>
      )}
    </>
  );
}

export default function SecurityPage() {
  const { user, refresh } = useSession();
  const status = useLoad(() => api.tfa.status());
  const audit = useLoad(() => api.audit.logs());
  const [adding, setAdding] = useState<'totp' | 'sms' | null>(null);
  const [codes, setCodes] = useState<string[] | null>(null);
  const [removing, setRemoving] = useState<Method | null>(null);
  const [regen, setRegen] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const remove = useAction();
  const regenAct = useAction();
  const primary = useAction();

  const s = status.data;
  const reload = async () => { await status.reload(); await audit.reload(); await refresh(); };

  return (
    <section>
      <AccountTabs />
      <h1>Security settings</h1>
      <ErrorNote error={status.error} />
      {notice && <p className="notice" role="status">{notice}</p>}
      {codes && user && !user.restricted && <BackupCodes codes={codes} email={user.email} onDone={() => setCodes(null)} />}

      <h2>Password</h2>
      <ChangePassword status={s ?? null} onChanged={(msg) => setNotice(msg)} />

      <h2>Two-factor authentication</h2>
      {s && (
        <>
          <p>
            Status: <strong>{s.tfa_enabled ? 'On' : 'Off'}</strong>
            {s.tfa_enabled && <> · {s.backup_codes_remaining} backup {s.backup_codes_remaining === 1 ? 'code' : 'codes'} left</>}
            {s.new_method_authorized && <> · authorized to add a method</>}
          </p>
          {s.methods.length === 0 && <p>No methods yet. Add one so that a stolen password is not enough to sign in.</p>}
          {s.methods.length > 0 && (
            <div className="table-wrap">
              <table aria-label="Two-factor methods">
                <thead><tr><th scope="col">Method</th><th scope="col">Kind</th><th scope="col">Primary</th><th scope="col">Added</th><th scope="col">Last used</th><th scope="col">State</th><th scope="col"><span className="sr-only">Actions</span></th></tr></thead>
                <tbody>
                  {s.methods.map((m) => (
                    <tr key={m.id}>
                      <td>{m.label}</td>
                      <td>{m.method === 'totp' ? 'Authenticator app' : `SMS ${m.phone_number ?? ''}`}</td>
                      <td>{m.is_primary ? <span className="badge ok">Primary</span> : 'No'}</td>
                      <td>{utcTime(m.created_at)}</td>
                      <td>{utcTime(m.last_used)}</td>
                      <td>{m.locked_until ? <span className="badge bad">Locked until {utcTime(m.locked_until)}</span> : 'Active'}</td>
                      <td>
                        <div className="actions">
                          {!m.is_primary && (
                            <button type="button" className="small" disabled={primary.busy} aria-label={`Make ${m.label} primary`}
                              onClick={async () => { if (await primary.run(() => api.tfa.update({ tfa_method_id: m.id, is_primary: true }))) await reload(); }}>
                              Make primary
                            </button>
                          )}
                          <button type="button" className="small danger" aria-label={`Remove ${m.label}`} onClick={() => { remove.clear(); setRemoving(m); }}>Remove</button>
                        </div>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <ErrorNote error={primary.error} />
          <div className="actions">
            <button type="button" className="primary" onClick={() => setAdding('totp')}>Add authenticator app</button>
            <button type="button" onClick={() => setAdding('sms')}>Add SMS number</button>
            {s.tfa_enabled && <button type="button" onClick={() => { regenAct.clear(); setRegen(true); }}>New backup codes</button>}
          </div>
        </>
      )}

      <h2>Audit log</h2>
      <ErrorNote error={audit.error} />
      {audit.data && audit.data.length === 0 && <p>Nothing recorded yet.</p>}
      {audit.data && audit.data.length > 0 && (
        <div className="table-wrap">
          <table aria-label="Audit log">
            <thead><tr><th scope="col">When</th><th scope="col">Action</th><th scope="col">From</th><th scope="col">Details</th></tr></thead>
            <tbody>
              {audit.data.slice(0, 200).map((a) => (
                <tr key={a.id}>
                  <td>{utcTime(a.created_at)}</td>
                  <td>{a.action}</td>
                  <td>{a.ip_address}</td>
                  <td className="wrap">{a.api_route}{a.args.fields.length > 0 ? ` (${a.args.fields.join(', ')})` : ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}

      {adding && s && (
        <AddMethod kind={adding} status={s} onClose={() => setAdding(null)} onAdded={async (c) => { setAdding(null); setNotice(adding === 'totp' ? 'Authenticator app added.' : 'SMS number added.'); if (c) setCodes(c); await reload(); }} />
      )}
      {removing && s && (
        <Modal title={`Remove ${removing.label}`} open onClose={() => setRemoving(null)}>
          <p>Confirm with a second factor to remove this method.{s.methods.length === 1 ? ' It is your last one: two-factor authentication turns off and your backup codes stop working.' : ''}</p>
          <Verify methods={s.methods} allowEmail action="Remove method" busy={remove.busy} error={remove.error}
            onFactor={async (f) => {
              const target = removing.id;
              const r = await remove.run(() => api.tfa.remove({ ...f, target_id: target }));
              if (r) { setRemoving(null); setNotice(r.msg); await reload(); }
            }} />
        </Modal>
      )}
      {regen && s && (
        <Modal title="New backup codes" open onClose={() => setRegen(false)}>
          <p>Your current backup codes stop working once the new ones are made.</p>
          <Verify methods={s.methods} allowEmail action="Make new codes" busy={regenAct.busy} error={regenAct.error}
            onFactor={async (f) => {
              const r = await regenAct.run(() => api.tfa.regenBackupCodes(f));
              if (r) { setRegen(false); setCodes(r.backup_codes); await reload(); }
            }} />
        </Modal>
      )}
    </section>
  );
}

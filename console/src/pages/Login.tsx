/**
 * Sign-in: e-mail and password, then the second factor when the account has one (spec: 2FA endpoints, "Logged-out
 * UI": the login's `tfa_secret` authenticates the 2FA calls; contract §3). A TOTP or SMS method of the account, an
 * e-mailed code, or a backup code; SMS and e-mail codes are sent on request. The session is the HttpOnly cookie
 * the server sets; the page never sees it.
 *
 * An account whose address is not verified yet is verified here too (issue 29 item 7: after a reload, sign-up no
 * longer had the code's form and login only said to verify first): the e-mailed code, or a new one, then the login.
 */
import { useState, type FormEvent } from 'react';
import { api, errorText, GpuplaneError } from '../lib/api.js';
import { Field, ErrorNote } from '../components/Field.js';
import { Link } from '../lib/router.js';
import { useFormAction } from '../components/useLoad.js';
import { useSession } from '../lib/session.js';

type Method = { id: number; method: 'sms' | 'totp'; label: string; phone_number: string | null; is_primary: boolean };
interface Challenge {
  secret: string;
  methods: Method[];
}
/** A choice of second factor: one of the account's methods, an e-mailed code, or a backup code. */
type Choice = { kind: 'method'; method: Method } | { kind: 'email' } | { kind: 'backup' };

const choiceKey = (c: Choice) => (c.kind === 'method' ? `m${c.method.id}` : c.kind);
const choiceLabel = (c: Choice) =>
  c.kind === 'email' ? 'E-mailed code' : c.kind === 'backup' ? 'Backup code'
    : c.method.method === 'totp' ? `Authenticator app (${c.method.label || 'TOTP'})` : `SMS to ${c.method.phone_number ?? 'your phone'}`;

export function LoginPage({ notice }: { notice?: string }) {
  const { refresh } = useSession();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [challenge, setChallenge] = useState<Challenge | null>(null);

  const [verifying, setVerifying] = useState(false);

  const logIn = async () => {
    const r = await api.auth.login({ username: email, password, client: 'ui' });
    if ('tfa_required' in r && r.tfa_required) {
      setChallenge({ secret: r.tfa_secret, methods: r.methods as Method[] });
    } else {
      await refresh(); // App then leaves the sign-in page
    }
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await logIn();
    } catch (err) {
      if (err instanceof GpuplaneError && err.error === 'email_not_verified') setVerifying(true);
      else setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  if (challenge) return <SecondFactor challenge={challenge} onBack={() => setChallenge(null)} />;
  if (verifying) return <VerifyEmail email={email} password={password} onVerified={logIn} onBack={() => setVerifying(false)} />;

  return (
    <section className="narrow">
      <h1>Log in</h1>
      {notice && <p role="status" className="notice">{notice}</p>}
      <form onSubmit={submit} noValidate>
        <Field label="Email" type="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} />
        <Field label="Password" type="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
        <ErrorNote error={error} />
        <button type="submit" className="primary" disabled={busy}>Log in</button>
      </form>
      <p><Link to="/reset-password">Forgot your password?</Link></p>
      <p>No account yet? <Link to="/signup">Sign up</Link></p>
    </section>
  );
}

/**
 * The e-mailed code of an unverified address, with the password just typed (a code that follows a second sign-up of
 * the address keeps only the latest sign-up's password: login's email-verify.ts), then the login goes on.
 */
export function VerifyEmail({ email, password, onVerified, onBack }: { email: string; password: string; onVerified(): Promise<void>; onBack?(): void }) {
  const [code, setCode] = useState('');
  const [notice, setNotice] = useState<string | null>(null);
  const { busy, error, submit: run } = useFormAction();
  const verify = run(async () => {
    await api.auth.verifyEmail({ email, code: code.trim(), password });
    await onVerified();
  });
  const resend = run(async () => {
    await api.auth.resendVerification({ email });
    setNotice(`A new code is on its way to ${email}, if a minute has passed since the last one.`);
  });

  return (
    <section className="narrow">
      <h1>Verify your e-mail</h1>
      <p>Your e-mail address {email} is not verified yet. Enter the code we e-mailed to it.</p>
      {notice && <p role="status" className="notice">{notice}</p>}
      <form onSubmit={verify} noValidate>
        <Field label="Verification code" inputMode="numeric" autoComplete="one-time-code" required value={code} onChange={(e) => setCode(e.target.value)} />
        <ErrorNote error={error} />
        <div className="actions">
          {onBack && <button type="button" onClick={onBack}>Back</button>}
          <button type="button" onClick={() => void resend()} disabled={busy}>Send a new code</button>
          <button type="submit" className="primary" disabled={busy}>Verify and log in</button>
        </div>
      </form>
    </section>
  );
}

function SecondFactor({ challenge, onBack }: { challenge: Challenge; onBack(): void }) {
  const { refresh } = useSession();
  const choices: Choice[] = [
    ...[...challenge.methods].sort((a, b) => Number(b.is_primary) - Number(a.is_primary)).map((method) => ({ kind: 'method' as const, method })),
    { kind: 'email' },
    { kind: 'backup' },
  ];
  const [choice, setChoice] = useState<Choice>(choices[0]);
  const [code, setCode] = useState('');
  /** The secret that completes this factor: the login's, or the one a sent SMS or e-mail returned. */
  const [sentSecret, setSentSecret] = useState<string | null>(null);
  const [sent, setSent] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const needsSend = choice.kind === 'email' || (choice.kind === 'method' && choice.method.method === 'sms');

  const pick = (c: Choice) => {
    setChoice(c);
    setCode('');
    setSentSecret(null);
    setSent(null);
    setError(null);
  };

  const send = async () => {
    setBusy(true);
    setError(null);
    try {
      const r = choice.kind === 'email'
        ? await api.tfa.sendEmail({ secret: challenge.secret })
        : await api.tfa.sendSms({ secret: challenge.secret, tfa_method_id: choice.kind === 'method' ? choice.method.id : undefined });
      setSentSecret(r.secret);
      setSent(r.msg);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  const verify = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      if (choice.kind === 'backup') await api.tfa.login({ backup_code: code.trim(), secret: challenge.secret });
      else if (choice.kind === 'email') await api.tfa.login({ tfa_method: 'email', code: code.trim(), secret: sentSecret ?? challenge.secret });
      else {
        await api.tfa.login({
          tfa_method: choice.method.method,
          tfa_method_id: choice.method.id,
          code: code.trim(),
          secret: choice.method.method === 'sms' ? (sentSecret ?? challenge.secret) : challenge.secret,
        });
      }
      await refresh(); // App then leaves the sign-in page
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="narrow">
      <h1>Second factor</h1>
      <form onSubmit={verify} noValidate>
        <fieldset>
          <legend>Verify with</legend>
          {choices.map((c) => (
            <label key={choiceKey(c)} className="radio">
              <input type="radio" name="factor" checked={choiceKey(c) === choiceKey(choice)} onChange={() => pick(c)} /> {choiceLabel(c)}
            </label>
          ))}
        </fieldset>
        {needsSend && (
          <p>
            <button type="button" onClick={send} disabled={busy}>{sentSecret ? 'Send again' : 'Send code'}</button>
            {sent && <span role="status"> {sent}</span>}
          </p>
        )}
        <Field
          label={choice.kind === 'backup' ? 'Backup code' : 'Code'}
          inputMode={choice.kind === 'backup' ? 'text' : 'numeric'}
          autoComplete="one-time-code"
          required
          value={code}
          onChange={(e) => setCode(e.target.value)}
        />
        <ErrorNote error={error} />
        <div className="actions">
          <button type="button" onClick={onBack}>Back</button>
          <button type="submit" className="primary" disabled={busy || (needsSend && !sentSecret)}>Verify</button>
        </div>
      </form>
    </section>
  );
}

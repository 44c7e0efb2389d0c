/**
 * A forgotten password (issue 29 item 7): the address, then the code e-mailed to it and a new password
 * (`POST`/`PUT /api/v0/users/reset-password/`). Every session of the account ends; the person then logs in. The
 * server answers the first step the same whether the address has an account or not, and so does this page.
 */
import { useState } from 'react';
import { api } from '../lib/api.js';
import { useFormAction } from '../components/useLoad.js';
import { ErrorNote, Field } from '../components/Field.js';
import { Link, navigate } from '../lib/router.js';

export function ResetPasswordPage() {
  const [email, setEmail] = useState('');
  const [code, setCode] = useState('');
  const [password, setPassword] = useState('');
  const [step, setStep] = useState<'email' | 'code'>('email');
  const [notice, setNotice] = useState<string | null>(null);
  const { busy, error, submit: run } = useFormAction();
  const ask = run(async () => {
    const r = await api.auth.requestPasswordReset({ email });
    setNotice(r.msg);
    setStep('code');
  });
  const reset = run(async () => {
    await api.auth.resetPassword({ email, code: code.trim(), new_password: password });
    navigate('/login?reset=1', { replace: true });
  });

  return (
    <section className="narrow">
      <h1>Reset your password</h1>
      {notice && <p role="status" className="notice">{notice}</p>}
      {step === 'email' ? (
        <form onSubmit={ask} noValidate>
          <p>We e-mail a code to your address; with it you choose a new password.</p>
          <Field label="Email" type="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} />
          <ErrorNote error={error} />
          <button type="submit" className="primary" disabled={busy}>E-mail me a code</button>
        </form>
      ) : (
        <form onSubmit={reset} noValidate>
          <Field label="Code from the e-mail" inputMode="numeric" autoComplete="one-time-code" required value={code} onChange={(e) => setCode(e.target.value)} />
          <Field label="New password" type="password" autoComplete="new-password" required minLength={8} hint="At least 8 characters. Every session of the account ends." value={password} onChange={(e) => setPassword(e.target.value)} />
          <ErrorNote error={error} />
          <div className="actions">
            <button type="button" onClick={() => void ask()} disabled={busy}>Send a new code</button>
            <button type="submit" className="primary" disabled={busy}>Set the new password</button>
          </div>
        </form>
      )}
      <p><Link to="/login">Back to log in</Link></p>
    </section>
  );
}

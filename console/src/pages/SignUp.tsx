/** Sign-up, then the e-mailed verification code (contract §3: `POST /api/v0/users/`, `/users/verify-email/`). */
import { useState } from 'react';
import { api } from '../lib/api.js';
import { useFormAction } from '../components/useLoad.js';
import { ErrorNote, Field } from '../components/Field.js';
import { Link, navigate } from '../lib/router.js';

export function SignUpPage() {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [fullName, setFullName] = useState('');
  const [code, setCode] = useState('');
  const [step, setStep] = useState<'form' | 'verify'>('form');
  const [notice, setNotice] = useState<string | null>(null);
  const { busy, error, submit: run } = useFormAction();

  const signUp = run(async () => {
    const r = await api.auth.signUp({ email, password, ...(fullName ? { full_name: fullName } : {}) });
    setNotice(r.msg);
    setStep('verify');
  });
  const verify = run(async () => {
    // With the password: after a second sign-up of this address, only the latest sign-up's password is kept.
    await api.auth.verifyEmail({ email, code: code.trim(), password });
    navigate(`/login?verified=1`, { replace: true });
  });
  const resend = run(async () => {
    const r = await api.auth.resendVerification({ email });
    setNotice(r.msg);
  });

  if (step === 'verify') {
    return (
      <section className="narrow">
        <h1>Verify your e-mail</h1>
        {notice && <p role="status" className="notice">{notice}</p>}
        <form onSubmit={verify} noValidate>
          <Field label="Verification code" inputMode="numeric" autoComplete="one-time-code" required value={code} onChange={(e) => setCode(e.target.value)} />
          <ErrorNote error={error} />
          <div className="actions">
            <button type="button" onClick={() => void resend()} disabled={busy}>Send a new code</button>
            <button type="submit" className="primary" disabled={busy}>Verify e-mail</button>
          </div>
        </form>
      </section>
    );
  }
  return (
    <section className="narrow">
      <h1>Sign up</h1>
      <form onSubmit={signUp} noValidate>
        <Field label="Email" type="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
        <Field label="Password" type="password" autoComplete="new-password" required minLength={8} hint="At least 8 characters." value={password} onChange={(e) => setPassword(e.target.value)} />
        <Field label="Full name" autoComplete="name" value={fullName} onChange={(e) => setFullName(e.target.value)} />
        <ErrorNote error={error} />
        <button type="submit" className="primary" disabled={busy}>Create account</button>
      </form>
      <p>Have an account? <Link to="/login">Log in</Link></p>
    </section>
  );
}

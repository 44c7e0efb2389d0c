import { useId, type InputHTMLAttributes, type ReactNode } from 'react';

/**
 * A labelled input with its error beside it: the label names the control for screen readers and tests
 * (`getByLabel('Email')`), and an error is linked by aria-describedby and marked invalid, not only coloured.
 */
export function Field({ label, error, hint, ...input }: { label: string; error?: string | null; hint?: ReactNode } & InputHTMLAttributes<HTMLInputElement>) {
  const id = useId();
  const described = [hint ? `${id}-hint` : '', error ? `${id}-err` : ''].filter(Boolean).join(' ') || undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input id={id} aria-invalid={error ? true : undefined} aria-describedby={described} {...input} />
      {hint && <small id={`${id}-hint`}>{hint}</small>}
      {error && <p id={`${id}-err`} className="error" role="alert">⚠ {error}</p>}
    </div>
  );
}

/** An error from the API, in its own words (`msg`), at the place it belongs to. */
export function ErrorNote({ error }: { error: string | null | undefined }) {
  if (!error) return null;
  return <p className="error" role="alert">⚠ {error}</p>;
}

import { useId, type ReactNode, type SelectHTMLAttributes } from 'react';

/** A labelled select with its hint and error, as Field is for inputs (the label names it for `getByLabel`). */
export function SelectField({ label, error, hint, options, ...select }: {
  label: string;
  error?: string | null;
  hint?: ReactNode;
  options: readonly { value: string; label: string }[];
} & SelectHTMLAttributes<HTMLSelectElement>) {
  const id = useId();
  const described = [hint ? `${id}-hint` : '', error ? `${id}-err` : ''].filter(Boolean).join(' ') || undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <select id={id} aria-invalid={error ? true : undefined} aria-describedby={described} {...select}>
        {options.map((o) => <option key={o.value} value={o.value}>{o.label}</option>)}
      </select>
      {hint && <small id={`${id}-hint`}>{hint}</small>}
      {error && <p id={`${id}-err`} className="error" role="alert">⚠ {error}</p>}
    </div>
  );
}

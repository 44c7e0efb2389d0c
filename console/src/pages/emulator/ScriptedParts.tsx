/**
 * The scaffolding the Emulator page's scripted sections share (with useScriptedForm): the form with its submit button
 * and error, the notice of the last step, and the list's table with its row and list buttons. Classes only: the
 * console's CSP allows no inline styles.
 */
import type { FormEvent, ReactNode } from 'react';
import { ErrorNote } from '../../components/Field.js';

/** The form (its fields as children, aligned at the top), then the last step's notice and the list's error. */
export function ScriptedForm({ label, submitLabel, onSubmit, busy, error, done, listError, children }: {
  /** The form's accessible name. */
  label: string;
  submitLabel: string;
  onSubmit(e: FormEvent): void;
  busy: boolean;
  error: string | null;
  done: string | null;
  listError: string | null;
  children: ReactNode;
}) {
  return (
    <>
      <form onSubmit={onSubmit} aria-label={label} noValidate>
        <div className="filters top">{children}</div>
        <ErrorNote error={error} />
        <div className="actions">
          <button type="submit" className="primary" disabled={busy}>{submitLabel}</button>
        </div>
      </form>
      {done && <p role="status" className="notice">{done}</p>}

      <ErrorNote error={listError} />
    </>
  );
}

/** A button of the list's: its words, and what it does. */
export interface ListStep {
  label: string;
  run(): Promise<unknown>;
}

/**
 * The list's table (its caption for screen readers and tests, a last column of actions), then the list's buttons:
 * refresh it (where its rows change on the server's clock), and clear it all (disabled while a step on it runs).
 */
export function RuleTable({ caption, columns, children, busy, refresh, clear }: {
  caption: string;
  columns: readonly string[];
  /** The rows. */
  children: ReactNode;
  busy: boolean;
  refresh?: ListStep;
  clear: ListStep;
}) {
  return (
    <>
      <div className="table-wrap">
        <table>
          <caption className="sr-only">{caption}</caption>
          <thead>
            <tr>
              {columns.map((c) => <th key={c} scope="col">{c}</th>)}
              <th scope="col"><span className="sr-only">Actions</span></th>
            </tr>
          </thead>
          <tbody>{children}</tbody>
        </table>
      </div>
      <div className="actions">
        {refresh && <button type="button" onClick={() => void refresh.run()}>{refresh.label}</button>}
        <button type="button" className="danger" disabled={busy} onClick={() => void clear.run()}>{clear.label}</button>
      </div>
    </>
  );
}

/** A row's button: its text, and an accessible name that says which row. */
export function RowButton({ label, busy, onClick, children }: { label: string; busy: boolean; onClick(): void; children: ReactNode }) {
  return (
    <button type="button" className="small" disabled={busy} aria-label={label} onClick={onClick}>
      {children}
    </button>
  );
}

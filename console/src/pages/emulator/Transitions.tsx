/**
 * Transitions (issue 34 item 4, as moto's state manager): how the simulated hosts move an instance from created to
 * running — immediately, after N seconds of the emulator's clock, or only when advanced by hand — for every instance or
 * for one, and the button that advances an instance to its next state now.
 */
import { useState, type FormEvent } from 'react';
import { utcTime } from '../../lib/format.js';
import {
  bootSecondsText, buildTransition, DEFAULT_TRANSITION, parseInstanceId, TRANSITION_MODES, transitionModeText, transitionScopeText,
  type FieldErrors, type TransitionForm, type TransitionRule,
} from '../../lib/emu-scripted.js';
import { ErrorNote, Field } from '../../components/Field.js';
import { useAction, useLoad } from '../../components/useLoad.js';
import { SelectField } from './SelectField.js';
import { scripted } from './scripted-api.js';

const SCOPE_OPTIONS = [{ value: 'kind', label: 'Every instance' }, { value: 'instance', label: 'One instance' }];
const MODE_OPTIONS = TRANSITION_MODES.map((m) => ({ value: m.mode, label: m.label }));

export function Transitions({ version, onChange }: { version: number; onChange(): void }) {
  const list = useLoad(() => scripted.transitions(), [version]);
  const [form, setForm] = useState<TransitionForm>(DEFAULT_TRANSITION);
  const [errors, setErrors] = useState<FieldErrors<TransitionForm>>({});
  const [done, setDone] = useState<string | null>(null);
  const save = useAction();
  const clear = useAction();
  const [advanceId, setAdvanceId] = useState('');
  const [advanceErr, setAdvanceErr] = useState<string | null>(null);
  const [advanced, setAdvanced] = useState<string | null>(null);
  const advance = useAction();
  const set = <K extends keyof TransitionForm>(k: K, v: TransitionForm[K]) => {
    setForm((f) => ({ ...f, [k]: v }));
    setDone(null);
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setDone(null);
    const b = buildTransition(form);
    setErrors(b.errors ?? {});
    if (!b.body) return;
    const body = b.body;
    if (await save.run(() => scripted.setTransition(body))) {
      setDone(`Transitions of ${transitionScopeText(body)}: ${transitionModeText(body)}.`);
      await list.reload();
    }
  };
  // An instance's rule is removed (the kind's rule applies to it again); the kind's rule is removed by setting it back
  // to the default, which is no rule at all.
  const remove = async (r: TransitionRule) => {
    setDone(null);
    const ok = r.instance_id
      ? (await clear.run(() => scripted.clearTransitions(r.instance_id!))) !== undefined
      : (await clear.run(() => scripted.setTransition({ kind: 'instance', mode: 'default' }))) !== undefined;
    if (ok) {
      setDone(r.instance_id ? `The rule for instance ${r.instance_id} was removed.` : 'Transitions of every instance: back to the default.');
      await list.reload();
    }
  };
  const clearAll = async () => {
    setDone(null);
    if ((await clear.run(() => scripted.clearTransitions())) !== undefined) {
      setDone('Every transition is back to the default.');
      await list.reload();
    }
  };
  const doAdvance = async (e: FormEvent) => {
    e.preventDefault();
    setAdvanced(null);
    const id = parseInstanceId(advanceId);
    if (id === null) return setAdvanceErr('Enter the instance ID.');
    setAdvanceErr(null);
    const r = await advance.run(() => scripted.advanceInstance(id));
    if (r) {
      setAdvanced(`Instance ${r.instance_id} is now ${r.actual_status ?? 'advanced'}.`);
      onChange();
    }
  };
  const rules = list.data?.transitions ?? [];
  const slowPulls = list.data?.slow_pulls ?? [];
  const boot = bootSecondsText(list.data?.default_boot_seconds);

  return (
    <section aria-labelledby="emu-transitions" className="card">
      <h2 id="emu-transitions">Transitions</h2>
      <p className="muted">How the simulated hosts take a new instance to running: at once, after a delay of the emulator's clock, or step by step when you advance it.</p>
      <form onSubmit={submit} aria-label="Set transitions" noValidate>
        <div className="filters top">
          <SelectField label="For" value={form.scope} options={SCOPE_OPTIONS} onChange={(e) => set('scope', e.target.value as TransitionForm['scope'])} />
          {form.scope === 'instance' && (
            <Field label="Instance ID" type="number" min={1} value={form.instanceId} error={errors.instanceId} onChange={(e) => set('instanceId', e.target.value)} />
          )}
          <SelectField label="Mode" value={form.mode} options={MODE_OPTIONS} hint={TRANSITION_MODES.find((m) => m.mode === form.mode)?.what} onChange={(e) => set('mode', e.target.value as TransitionForm['mode'])} />
          {form.mode === 'delay' && (
            <Field label="Delay" value={form.seconds} error={errors.seconds} onChange={(e) => set('seconds', e.target.value)} hint="Virtual time: 90 (seconds), 15m, 2h" />
          )}
        </div>
        <ErrorNote error={save.error} />
        <div className="actions">
          <button type="submit" className="primary" disabled={save.busy}>Set transitions</button>
        </div>
      </form>
      {done && <p role="status" className="notice">{done}</p>}

      <ErrorNote error={list.error ?? clear.error} />
      {list.data && <p>Default: the emulator's seeded timing ({boot}).{rules.length === 0 && ' No rules are set.'}</p>}
      {rules.length > 0 && (
        <>
          <div className="table-wrap">
            <table>
              <caption className="sr-only">Transitions</caption>
              <thead><tr><th scope="col">For</th><th scope="col">Mode</th><th scope="col"><span className="sr-only">Actions</span></th></tr></thead>
              <tbody>
                {rules.map((r) => (
                  <tr key={r.instance_id ?? `kind-${r.kind ?? 'instance'}`}>
                    <td>{transitionScopeText(r)}</td>
                    <td>{transitionModeText(r)}</td>
                    <td>
                      <button type="button" className="small" disabled={clear.busy} aria-label={`Remove the rule for ${transitionScopeText(r)}`} onClick={() => void remove(r)}>
                        Remove
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <div className="actions">
            <button type="button" className="danger" disabled={clear.busy} onClick={() => void clearAll()}>Clear all transitions</button>
          </div>
        </>
      )}

      {slowPulls.length > 0 && (
        <>
          <h3>Slow pulls now</h3>
          <ul aria-label="Slow pulls now">
            {slowPulls.map((w) => (
              <li key={`${w.ref}-${w.machine_id}`}>Machine {w.machine_id}: pulls take {w.pull_seconds} s, {w.until === null ? 'until its event ends' : `until ${utcTime(w.until)}`} ({w.ref})</li>
            ))}
          </ul>
        </>
      )}

      <h3>Advance an instance</h3>
      <form onSubmit={doAdvance} className="row-form" aria-label="Advance an instance" noValidate>
        <Field label="Instance to advance" type="number" min={1} value={advanceId} error={advanceErr ?? advance.error}
          onChange={(e) => { setAdvanceId(e.target.value); setAdvanced(null); }} hint="Its next state now: created → loading → running" />
        <div className="field"><button type="submit" disabled={advance.busy}>Advance instance</button></div>
      </form>
      {advanced && <p role="status" className="notice">{advanced}</p>}
    </section>
  );
}

/**
 * Transitions (issue 34 item 4, as moto's state manager): how the simulated hosts move an instance from created to
 * running — immediately, after N seconds of the emulator's clock, or only when advanced by hand — for every instance or
 * for one, and the button that advances an instance to its next state now.
 */
import { useState, type FormEvent } from 'react';
import { utcTime } from '../../lib/format.js';
import {
  bootSecondsText, buildTransition, DEFAULT_TRANSITION, parseInstanceId, TRANSITION_MODES, transitionModeText, transitionScopeText,
  type TransitionForm, type TransitionRule,
} from '../../lib/emu-scripted.js';
import { Field } from '../../components/Field.js';
import { useAction } from '../../components/useLoad.js';
import { RowButton, RuleTable, ScriptedForm } from './ScriptedParts.js';
import { SelectField } from './SelectField.js';
import { scripted } from './scripted-api.js';
import { useScriptedForm } from './useScriptedForm.js';

const SCOPE_OPTIONS = [{ value: 'kind', label: 'Every instance' }, { value: 'instance', label: 'One instance' }];
const MODE_OPTIONS = TRANSITION_MODES.map((m) => ({ value: m.mode, label: m.label }));

export function Transitions({ version, onChange }: { version: number; onChange(): void }) {
  const { list, form, errors, done, set, submit, send, listStep, act } = useScriptedForm({
    load: () => scripted.transitions(), version,
    initial: DEFAULT_TRANSITION, build: buildTransition, send: (body) => scripted.setTransition(body),
    sent: (_, body) => `Transitions of ${transitionScopeText(body)}: ${transitionModeText(body)}.`,
  });
  const [advanceId, setAdvanceId] = useState('');
  const [advanceErr, setAdvanceErr] = useState<string | null>(null);
  const [advanced, setAdvanced] = useState<string | null>(null);
  const advance = useAction();

  // An instance's rule is removed (the kind's rule applies to it again); the kind's rule is removed by setting it back
  // to the default, which is no rule at all.
  const remove = (r: TransitionRule) => act(
    () => (r.instance_id ? scripted.clearTransitions(r.instance_id) : scripted.setTransition({ kind: 'instance', mode: 'default' })),
    r.instance_id ? `The rule for instance ${r.instance_id} was removed.` : 'Transitions of every instance: back to the default.',
  );
  const clearAll = () => act(() => scripted.clearTransitions(), 'Every transition is back to the default.');
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
      <ScriptedForm label="Set transitions" submitLabel="Set transitions" onSubmit={submit} busy={send.busy} error={send.error} done={done}
        listError={list.error ?? listStep.error}>
        <SelectField label="For" value={form.scope} options={SCOPE_OPTIONS} onChange={(e) => set('scope', e.target.value as TransitionForm['scope'])} />
        {form.scope === 'instance' && (
          <Field label="Instance ID" type="number" min={1} value={form.instanceId} error={errors.instanceId} onChange={(e) => set('instanceId', e.target.value)} />
        )}
        <SelectField label="Mode" value={form.mode} options={MODE_OPTIONS} hint={TRANSITION_MODES.find((m) => m.mode === form.mode)?.what} onChange={(e) => set('mode', e.target.value as TransitionForm['mode'])} />
        {form.mode === 'delay' && (
          <Field label="Delay" value={form.seconds} error={errors.seconds} onChange={(e) => set('seconds', e.target.value)} hint="Virtual time: 90 (seconds), 15m, 2h" />
        )}
      </ScriptedForm>
      {list.data && <p>Default: the emulator's seeded timing ({boot}).{rules.length === 0 && ' No rules are set.'}</p>}
      {rules.length > 0 && (
        <RuleTable caption="Transitions" columns={['For', 'Mode']} busy={listStep.busy} clear={{ label: 'Clear all transitions', run: clearAll }}>
          {rules.map((r) => (
            <tr key={r.instance_id ?? `kind-${r.kind ?? 'instance'}`}>
              <td>{transitionScopeText(r)}</td>
              <td>{transitionModeText(r)}</td>
              <td>
                <RowButton label={`Remove the rule for ${transitionScopeText(r)}`} busy={listStep.busy} onClick={() => void remove(r)}>Remove</RowButton>
              </td>
            </tr>
          ))}
        </RuleTable>
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

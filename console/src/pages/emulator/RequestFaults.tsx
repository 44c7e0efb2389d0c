/**
 * Request faults (issue 34 item 3): API requests answered with a 429 (with `Retry-After`, as Vast.ai sends it), a 5xx,
 * no reply, or a delay, chosen by route, method or permission category, with a probability drawn from a seed so a run
 * repeats. The control API itself (`/_emu/`) is never faulted, so this page can always clear a rule.
 */
import { CATEGORIES } from '../../lib/permissions.js';
import {
  buildRequestFault, DEFAULT_REQUEST_FAULT, FAULT_METHODS, FAULT_OUTCOMES, FAULT_STATUSES, faultEffectText, faultMatchText, faultOddsText,
  type RequestFaultForm,
} from '../../lib/emu-scripted.js';
import { Field } from '../../components/Field.js';
import { RowButton, RuleTable, ScriptedForm } from './ScriptedParts.js';
import { SelectField } from './SelectField.js';
import { scripted } from './scripted-api.js';
import { useScriptedForm } from './useScriptedForm.js';

const METHOD_OPTIONS = FAULT_METHODS.map((m) => ({ value: m, label: m === '*' ? 'Any method' : m }));
const CATEGORY_OPTIONS = [{ value: '', label: 'Any category' }, ...CATEGORIES.map((c) => ({ value: c, label: c }))];
const STATUS_OPTIONS = FAULT_STATUSES.map((s) => ({ value: String(s), label: String(s) }));

export function RequestFaults({ version }: { version: number }) {
  const { list, form, errors, done, set, submit, send, listStep, act } = useScriptedForm({
    load: () => scripted.requestFaults(), version,
    initial: DEFAULT_REQUEST_FAULT, build: buildRequestFault,
    send: (body) => scripted.addRequestFault(body), sent: (r) => `Request fault ${r.fault.id} added.`,
  });
  const clearOne = (id: number) => act(() => scripted.clearRequestFault(id), `Request fault ${id} cleared.`);
  const clearAll = () => act(() => scripted.clearRequestFaults(), 'Every request fault was cleared.');
  const faults = list.data?.faults ?? [];

  return (
    <section aria-labelledby="emu-request-faults" className="card">
      <h3 id="emu-request-faults">Request faults</h3>
      <p className="muted">
        API requests answered with an error, no reply or a delay, as a busy cloud answers. The emulator's own controls are
        never faulted.
      </p>
      <ScriptedForm label="Add a request fault" submitLabel="Add request fault" onSubmit={submit} busy={send.busy} error={send.error} done={done}
        listError={list.error ?? listStep.error}>
        <Field label="Route" value={form.route} onChange={(e) => set('route', e.target.value)} error={errors.route}
          placeholder="/api/v0/instances/{id}/" hint="As the API reference writes it; * at the end: a prefix; * alone: every route" />
        <SelectField label="Method" value={form.method} options={METHOD_OPTIONS} onChange={(e) => set('method', e.target.value as RequestFaultForm['method'])} />
        <SelectField label="Permission category" value={form.category} options={CATEGORY_OPTIONS} onChange={(e) => set('category', e.target.value)} />
        <SelectField label="Reply" value={form.outcome} options={FAULT_OUTCOMES} hint={FAULT_OUTCOMES.find((o) => o.value === form.outcome)?.what} onChange={(e) => set('outcome', e.target.value as RequestFaultForm['outcome'])} />
        {form.outcome === 'status' && (
          <SelectField label="Status" value={form.status} options={STATUS_OPTIONS} error={errors.status} onChange={(e) => set('status', e.target.value)} />
        )}
        {form.outcome === 'status' && form.status === '429' && (
          <Field label="Retry-After (seconds)" type="number" min={0} value={form.retryAfter} error={errors.retryAfter} onChange={(e) => set('retryAfter', e.target.value)} />
        )}
        <Field label={form.outcome === 'timeout' ? 'Drop after (ms)' : form.outcome === 'latency' ? 'Delay (ms)' : 'Added delay (ms)'} type="number" min={0} max={60000}
          value={form.latencyMs} error={errors.latencyMs} onChange={(e) => set('latencyMs', e.target.value)}
          hint={form.outcome === 'timeout' ? 'Empty: 30000' : undefined} />
        <Field label="Probability" type="number" min={0} max={1} step="any" value={form.probability} error={errors.probability}
          onChange={(e) => set('probability', e.target.value)} hint="0 to 1; 0.5: half the matching requests" />
        <Field label="At most (times)" type="number" min={1} value={form.count} error={errors.count} onChange={(e) => set('count', e.target.value)} hint="Empty: no limit" />
        <Field label="Fault seed" type="number" min={0} value={form.seed} error={errors.seed} onChange={(e) => set('seed', e.target.value)} hint="Empty: the server's seed" />
      </ScriptedForm>
      {list.data && faults.length === 0 && <p>No request faults.</p>}
      {faults.length > 0 && (
        <RuleTable caption="Request faults" columns={['ID', 'Requests', 'Reply', 'How often', 'Fired', 'Matched']} busy={listStep.busy}
          refresh={{ label: 'Refresh request faults', run: list.reload }} clear={{ label: 'Clear all request faults', run: clearAll }}>
          {faults.map((r) => (
            <tr key={r.id}>
              <td>{r.id}</td>
              <td><code>{faultMatchText(r)}</code></td>
              <td>{faultEffectText(r)}</td>
              <td>{faultOddsText(r)}</td>
              <td>{r.fired ?? 0}</td>
              <td>{r.matched ?? '—'}</td>
              <td><RowButton label={`Clear request fault ${r.id}`} busy={listStep.busy} onClick={() => void clearOne(r.id)}>Clear</RowButton></td>
            </tr>
          ))}
        </RuleTable>
      )}
    </section>
  );
}

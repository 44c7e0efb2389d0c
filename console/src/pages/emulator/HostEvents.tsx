/**
 * Host events (issue 34 item 3): an outbid wave, a host offline for a while, a slow pull, a lost GPU, at a time of the
 * emulator's clock (with the virtual clock: when an advance passes it), on machines given or chosen by the seed.
 */
import {
  buildHostEvent, DEFAULT_HOST_EVENT, EVENT_KINDS, EVENT_TARGETS, eventCancellable, eventDetailText, eventDuration, eventKindLabel,
  eventMachinesText, eventStateBadge, eventWhenText, OFFLINE_FAULTS, type HostEventForm,
} from '../../lib/emu-scripted.js';
import { Field } from '../../components/Field.js';
import { RowButton, RuleTable, ScriptedForm } from './ScriptedParts.js';
import { SelectField } from './SelectField.js';
import { scripted } from './scripted-api.js';
import { useScriptedForm } from './useScriptedForm.js';

const KIND_OPTIONS = EVENT_KINDS.map((k) => ({ value: k.kind, label: k.label }));

export function HostEvents({ version, now, onChange }: { version: number; now: number | undefined; onChange(): void }) {
  const { list, form, errors, done, set, submit, send, listStep, act } = useScriptedForm({
    load: () => scripted.events(), version, onChange,
    initial: DEFAULT_HOST_EVENT, build: buildHostEvent, send: (body) => scripted.addEvent(body),
    sent: (r) => `Event ${r.event.id} (${eventKindLabel(r.event.kind)}) scheduled on machines ${eventMachinesText(r.event.machine_ids)}.`,
  });
  const duration = eventDuration(form.kind);
  const cancelOne = (id: number, state: string) =>
    act(() => scripted.cancelEvent(id), state === 'active' ? `Event ${id} ended.` : `Event ${id} cancelled.`);
  const cancelAll = () => act(() => scripted.cancelEvents(), 'Every event was cancelled or ended.');
  const events = list.data?.events ?? [];

  return (
    <section aria-labelledby="emu-host-events" className="card">
      <h3 id="emu-host-events">Host events</h3>
      <p className="muted">Things that happen to hosts at a time of the emulator's clock. With the virtual clock, they happen when an advance passes their time.</p>
      <ScriptedForm label="Add a host event" submitLabel="Add event" onSubmit={submit} busy={send.busy} error={send.error} done={done}
        listError={list.error ?? listStep.error}>
        <SelectField label="Event" value={form.kind} options={KIND_OPTIONS} hint={EVENT_KINDS.find((k) => k.kind === form.kind)?.what} onChange={(e) => set('kind', e.target.value as HostEventForm['kind'])} />
        <Field label="Starts in" value={form.after} error={errors.after} onChange={(e) => set('after', e.target.value)} hint="0: now; 90 (seconds), 15m, 2h" />
        <SelectField label="Machines" value={form.target} options={EVENT_TARGETS} onChange={(e) => set('target', e.target.value as HostEventForm['target'])} />
        {form.target === 'fraction' && (
          <Field label="Share of the fleet" type="number" min={0} max={1} step="any" value={form.fraction} error={errors.fraction}
            onChange={(e) => set('fraction', e.target.value)} hint="0 to 1, chosen by the seed" />
        )}
        {form.target === 'machines' && (
          <Field label="Number of machines" type="number" min={1} value={form.machines} error={errors.machines}
            onChange={(e) => set('machines', e.target.value)} hint="Chosen by the seed" />
        )}
        {form.target === 'ids' && (
          <Field label="Machine IDs" value={form.machineIds} error={errors.machineIds} onChange={(e) => set('machineIds', e.target.value)} placeholder="3, 7" />
        )}
        {duration !== 'none' && (
          <Field label="Lasts" value={form.duration} error={errors.duration} onChange={(e) => set('duration', e.target.value)}
            hint={duration === 'optional' ? 'Empty: the GPU stays lost' : '90 (seconds), 15m, 2h'} />
        )}
        {form.kind === 'host_offline' && (
          <SelectField label="The host" value={form.fault} options={OFFLINE_FAULTS} onChange={(e) => set('fault', e.target.value as HostEventForm['fault'])} />
        )}
        {form.kind === 'slow_pull' && (
          <Field label="A pull takes (seconds)" type="number" min={1} value={form.pullSeconds} error={errors.pullSeconds} onChange={(e) => set('pullSeconds', e.target.value)} />
        )}
        {form.kind === 'gpu_lost' && (
          <Field label="GPU index" type="number" min={0} value={form.gpuIndex} error={errors.gpuIndex} onChange={(e) => set('gpuIndex', e.target.value)} hint="Empty: chosen by the seed" />
        )}
        <Field label="Event seed" type="number" min={0} value={form.seed} error={errors.seed} onChange={(e) => set('seed', e.target.value)} hint="Empty: the server's seed" />
      </ScriptedForm>
      {list.data && events.length === 0 && <p>No host events.</p>}
      {events.length > 0 && (
        <RuleTable caption="Host events" columns={['ID', 'Event', 'When', 'Machines', 'Details', 'State']} busy={listStep.busy}
          refresh={{ label: 'Refresh events', run: list.reload }} clear={{ label: 'Cancel all events', run: cancelAll }}>
          {events.map((ev) => (
            <tr key={ev.id}>
              <td>{ev.id}</td>
              <td>{eventKindLabel(ev.kind)}</td>
              <td>{eventWhenText(ev.at, now)}</td>
              <td className="wrap">{eventMachinesText(ev.machine_ids)}</td>
              <td>{eventDetailText(ev)}</td>
              <td><span className={`badge ${eventStateBadge(ev.state)}`}>{ev.state}</span></td>
              <td>
                {eventCancellable(ev.state) && (
                  <RowButton label={`${ev.state === 'active' ? 'End' : 'Cancel'} event ${ev.id}`} busy={listStep.busy} onClick={() => void cancelOne(ev.id, ev.state)}>
                    {ev.state === 'active' ? 'End' : 'Cancel'}
                  </RowButton>
                )}
              </td>
            </tr>
          ))}
        </RuleTable>
      )}
    </section>
  );
}

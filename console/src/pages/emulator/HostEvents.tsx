/**
 * Host events (issue 34 item 3): an outbid wave, a host offline for a while, a slow pull, a lost GPU, at a time of the
 * emulator's clock (with the virtual clock: when an advance passes it), on machines given or chosen by the seed.
 */
import { useState, type FormEvent } from 'react';
import {
  buildHostEvent, DEFAULT_HOST_EVENT, EVENT_KINDS, EVENT_TARGETS, eventCancellable, eventDetailText, eventDuration, eventKindLabel,
  eventMachinesText, eventStateBadge, eventWhenText, OFFLINE_FAULTS, type FieldErrors, type HostEventForm,
} from '../../lib/emu-scripted.js';
import { ErrorNote, Field } from '../../components/Field.js';
import { useAction, useLoad } from '../../components/useLoad.js';
import { SelectField } from './SelectField.js';
import { scripted } from './scripted-api.js';

const KIND_OPTIONS = EVENT_KINDS.map((k) => ({ value: k.kind, label: k.label }));

export function HostEvents({ version, now, onChange }: { version: number; now: number | undefined; onChange(): void }) {
  const list = useLoad(() => scripted.events(), [version]);
  const [form, setForm] = useState<HostEventForm>(DEFAULT_HOST_EVENT);
  const [errors, setErrors] = useState<FieldErrors<HostEventForm>>({});
  const [done, setDone] = useState<string | null>(null);
  const add = useAction();
  const cancel = useAction();
  const set = <K extends keyof HostEventForm>(k: K, v: HostEventForm[K]) => {
    setForm((f) => ({ ...f, [k]: v }));
    setDone(null);
  };
  const duration = eventDuration(form.kind);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setDone(null);
    const b = buildHostEvent(form);
    setErrors(b.errors ?? {});
    if (!b.body) return;
    const r = await add.run(() => scripted.addEvent(b.body));
    if (r) {
      setDone(`Event ${r.event.id} (${eventKindLabel(r.event.kind)}) scheduled on machines ${eventMachinesText(r.event.machine_ids)}.`);
      await list.reload();
      onChange();
    }
  };
  const cancelOne = async (id: number, state: string) => {
    setDone(null);
    if ((await cancel.run(() => scripted.cancelEvent(id))) !== undefined) {
      setDone(state === 'active' ? `Event ${id} ended.` : `Event ${id} cancelled.`);
      await list.reload();
      onChange();
    }
  };
  const cancelAll = async () => {
    setDone(null);
    if ((await cancel.run(() => scripted.cancelEvents())) !== undefined) {
      setDone('Every event was cancelled or ended.');
      await list.reload();
      onChange();
    }
  };
  const events = list.data?.events ?? [];

  return (
    <section aria-labelledby="emu-host-events" className="card">
      <h3 id="emu-host-events">Host events</h3>
      <p className="muted">Things that happen to hosts at a time of the emulator's clock. With the virtual clock, they happen when an advance passes their time.</p>
      <form onSubmit={submit} aria-label="Add a host event" noValidate>
        <div className="filters top">
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
        </div>
        <ErrorNote error={add.error} />
        <div className="actions">
          <button type="submit" className="primary" disabled={add.busy}>Add event</button>
        </div>
      </form>
      {done && <p role="status" className="notice">{done}</p>}

      <ErrorNote error={list.error ?? cancel.error} />
      {list.data && events.length === 0 && <p>No host events.</p>}
      {events.length > 0 && (
        <>
          <div className="table-wrap">
            <table>
              <caption className="sr-only">Host events</caption>
              <thead>
                <tr><th scope="col">ID</th><th scope="col">Event</th><th scope="col">When</th><th scope="col">Machines</th><th scope="col">Details</th><th scope="col">State</th><th scope="col"><span className="sr-only">Actions</span></th></tr>
              </thead>
              <tbody>
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
                        <button type="button" className="small" disabled={cancel.busy} aria-label={`${ev.state === 'active' ? 'End' : 'Cancel'} event ${ev.id}`}
                          onClick={() => void cancelOne(ev.id, ev.state)}>
                          {ev.state === 'active' ? 'End' : 'Cancel'}
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <div className="actions">
            <button type="button" onClick={() => void list.reload()}>Refresh events</button>
            <button type="button" className="danger" disabled={cancel.busy} onClick={() => void cancelAll()}>Cancel all events</button>
          </div>
        </>
      )}
    </section>
  );
}

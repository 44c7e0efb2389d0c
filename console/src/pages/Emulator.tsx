/**
 * Emulator panel (issue 15; contract §2): the virtual clock and its advance, the outbox of "sent" e-mails and SMS with
 * their codes, faults, scripted failures (request faults and host events) and transitions (issue 34, in
 * pages/emulator/), and reset. Offered to admins in emulator mode. The control API answers admins only: anyone
 * else who opens this page's address gets a plain "admins only" page, and the page asks the API nothing, so it makes
 * no refused requests (issue 29 item 9).
 */
import { useState, type FormEvent } from 'react';
import { api } from '../lib/api.js';
import { utcTime } from '../lib/format.js';
import { FAULTS, parseDuration } from '../lib/emulator.js';
import { ErrorNote, Field } from '../components/Field.js';
import { Confirm } from '../components/Modal.js';
import { useAction, useLoad } from '../components/useLoad.js';
import { useSession } from '../lib/session.js';
import { RequestFaults } from './emulator/RequestFaults.js';
import { HostEvents } from './emulator/HostEvents.js';
import { Transitions } from './emulator/Transitions.js';

export default function EmulatorPage() {
  const { user } = useSession();
  if (user?.is_admin !== true) {
    return (
      <section>
        <h1>Emulator</h1>
        <p role="status">Admins only: the emulator's controls (clock, outbox, faults, scripted failures, transitions, reset) are for an admin account.</p>
      </section>
    );
  }
  return <EmulatorPanel />;
}

function EmulatorPanel() {
  const clock = useLoad(() => api.emulator.clock());
  const [to, setTo] = useState('');
  const outbox = useLoad(() => api.emulator.outbox(to.trim() ? { to: to.trim() } : {}), [to]);
  const [advanceBy, setAdvanceBy] = useState('1h');
  const [advanceErr, setAdvanceErr] = useState<string | null>(null);
  const advance = useAction();
  const [faultIdx, setFaultIdx] = useState(0);
  const [target, setTarget] = useState('');
  const [count, setCount] = useState('1');
  const [faultDone, setFaultDone] = useState<string | null>(null);
  const fault = useAction();
  const [confirmReset, setConfirmReset] = useState(false);
  const reset = useAction();
  const [resetDone, setResetDone] = useState(false);
  const { refresh } = useSession();
  // Bumped when the clock moves or the world is reset: the scripted sections' lists change with it (an event falls due).
  const [version, setVersion] = useState(0);
  const changed = () => setVersion((v) => v + 1);

  const doAdvance = async (e: FormEvent) => {
    e.preventDefault();
    const s = parseDuration(advanceBy);
    if (s === null) return setAdvanceErr('Enter a duration such as 90, 15m, 2h, 1d or 1h30m.');
    setAdvanceErr(null);
    if (await advance.run(() => api.emulator.advance(s))) {
      changed();
      await Promise.all([clock.reload(), outbox.reload()]);
    }
  };

  const f = FAULTS[faultIdx]!;
  const doFault = async (e: FormEvent) => {
    e.preventDefault();
    setFaultDone(null);
    const id = Number(target);
    const body =
      f.target === 'count'
        ? { fault: f.fault, count: Number(count) || 1 }
        : f.target === 'instance'
          ? { fault: f.fault, instance_id: id }
          : { fault: f.fault, machine_id: id };
    if (await fault.run(() => api.emulator.fault(body))) setFaultDone(`Fault ${f.fault} applied.`);
  };

  return (
    <section>
      <h1>Emulator</h1>
      <p>Drive the emulator: move its clock, read the codes it "sent", inject faults, start over.</p>

      <div className="grid2">
        <div className="card">
          <h2>Clock</h2>
          <ErrorNote error={clock.error} />
          <p>Now: <strong data-testid="clock-now">{clock.data ? utcTime(clock.data.now) : '…'}</strong>{clock.data && <span className="muted"> ({clock.data.now} s)</span>}</p>
          <form onSubmit={doAdvance} className="row-form" aria-label="Advance the clock">
            <Field label="Advance by" value={advanceBy} onChange={(e) => setAdvanceBy(e.target.value)} error={advanceErr ?? advance.error} hint="90 (seconds), 15m, 2h, 1d, 1h30m" />
            <div className="field"><button type="submit" className="primary" disabled={advance.busy}>Advance clock</button></div>
          </form>
          <div className="actions">
            {['1h', '1d', '7d'].map((d) => (
              <button key={d} type="button" className="small" disabled={advance.busy} onClick={async () => { if (await advance.run(() => api.emulator.advance(parseDuration(d)!))) { changed(); await clock.reload(); } }}>
                +{d}
              </button>
            ))}
          </div>
        </div>

        <div className="card">
          <h2>Faults</h2>
          <form onSubmit={doFault} aria-label="Inject a fault">
            <div className="field">
              <label htmlFor="emu-fault">Fault</label>
              <select id="emu-fault" value={faultIdx} onChange={(e) => { setFaultIdx(Number(e.target.value)); setFaultDone(null); }}>
                {FAULTS.map((x, i) => <option key={i} value={i}>{x.fault} ({x.target === 'count' ? 'messages' : x.target}): {x.what}</option>)}
              </select>
            </div>
            {f.target === 'count' ? (
              <Field label="How many times" type="number" min={1} max={1000} value={count} onChange={(e) => setCount(e.target.value)} />
            ) : (
              <Field label={f.target === 'instance' ? 'Instance ID' : 'Machine ID'} type="number" min={1} required value={target} onChange={(e) => setTarget(e.target.value)} />
            )}
            <ErrorNote error={fault.error} />
            {faultDone && <p role="status" className="notice">{faultDone}</p>}
            <button type="submit" disabled={fault.busy}>Inject fault</button>
          </form>
        </div>
      </div>

      <h2>Scripted failures</h2>
      <p className="muted">Seeded: the same rules, events and seed give the same failures on every run.</p>
      <RequestFaults version={version} />
      <HostEvents version={version} now={clock.data?.now} onChange={changed} />
      <Transitions version={version} onChange={changed} />

      <h2>Outbox</h2>
      <p className="muted">Every e-mail and SMS the emulator "sent" instead of sending, newest first.</p>
      <div className="row-form">
        <Field label="Recipient" type="search" value={to} placeholder="e-mail or phone number" onChange={(e) => setTo(e.target.value)} />
        <div className="field"><button type="button" onClick={() => outbox.reload()}>Refresh outbox</button></div>
      </div>
      <ErrorNote error={outbox.error} />
      {outbox.data && outbox.data.messages.length === 0 && <p>No messages.</p>}
      {outbox.data && outbox.data.messages.length > 0 && (
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Outbox</caption>
            <thead><tr><th scope="col">Sent</th><th scope="col">Channel</th><th scope="col">To</th><th scope="col">Code</th><th scope="col">Text</th></tr></thead>
            <tbody>
              {[...outbox.data.messages].reverse().map((m) => (
                <tr key={m.id}>
                  <td>{utcTime(m.sent_at)}</td>
                  <td>{m.channel === 'sms' ? 'SMS' : 'E-mail'}</td>
                  <td>{m.to}</td>
                  <td><code>{m.code ?? '—'}</code></td>
                  <td className="wrap">{m.text}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}

      <h2>Reset</h2>
      <p>Back to a fresh, seeded emulator: every account, instance and message is removed, your own included.</p>
      <ErrorNote error={reset.error} />
      {resetDone && <p role="status" className="notice">The emulator was reset.</p>}
      <button type="button" className="danger" onClick={() => setConfirmReset(true)}>Reset emulator</button>
      <Confirm
        open={confirmReset}
        title="Reset the emulator"
        message="Remove everything and start from the seeded state? You will be signed out if your account goes with it."
        action="Reset"
        busy={reset.busy}
        onClose={() => setConfirmReset(false)}
        onConfirm={async () => {
          setConfirmReset(false);
          if (await reset.run(() => api.emulator.reset())) {
            setResetDone(true);
            changed();
            await refresh();
          }
        }}
      />
    </section>
  );
}

/**
 * Instances (issue 15): a live table (the server's instance events over server-sent events, no polling), virtualized
 * so a thousand rows scroll smoothly; per instance its status timeline, SSH command and ports to copy, logs, and
 * stop/start/reboot/destroy (confirmed), label and bid changes. Errors appear next to the action that caused them.
 */
import { useCallback, useEffect, useMemo, useRef, useState, type FormEvent } from 'react';
import { api, errorText, GpuplaneError } from '../lib/api.js';
import { Backoff } from '../../../src/sdk/backoff.js';
import { readEvents } from '../../../src/sdk/sse.js';
import {
  applyEvent, initialState, replaceRow, sortedRows, statusBadge, visibleRange, withHistory,
  type InstanceRow, type LiveState, type StatusEvent,
} from '../lib/instances-live.js';
import { connectInfo, portGrantPath, portLines, type ConnectLine, type PortEntry } from '../lib/connect.js';
import { navigate, useLocation } from '../lib/router.js';
import { counted } from '../lib/format.js';
import { CopyButton } from '../components/CopyButton.js';
import { Confirm } from '../components/Modal.js';
import { ErrorNote, Field } from '../components/Field.js';

const ROW_HEIGHT = 36;
const VIEWPORT_ROWS = 14;
/**
 * Wait before reconnecting a dropped event stream, doubling to RECONNECT_MAX_MS while it keeps failing, jittered
 * (src/sdk/backoff.ts): every open console reconnects after a server restart, and not all in the same instant.
 */
const RECONNECT_MS = 2000;
const RECONNECT_MAX_MS = 30_000;

function Badge({ status }: { status: string | null | undefined }) {
  const b = statusBadge(status);
  return <span className={`badge ${b.kind}`}>{b.text}</span>;
}

const when = (t: number) => new Date(t * 1000).toISOString().replace('T', ' ').slice(0, 19);

/** The list, then the event stream from the list's moment on; reconnects (resuming after the last event) if it drops. */
function useLiveInstances(): {
  state: LiveState | null; error: string | null; refreshRow(id: number): Promise<void>; loadHistory(id: number): Promise<void>;
} {
  const [state, setState] = useState<LiveState | null>(null);
  const [error, setError] = useState<string | null>(null);
  const stateRef = useRef<LiveState | null>(null);
  stateRef.current = state;

  const load = useCallback(async () => {
    const r = await api.instances.list();
    setState((prev) => initialState(r.instances as InstanceRow[], prev ?? undefined));
  }, []);

  // A state change can bring new details (SSH address and ports when it runs; gone when destroyed).
  const refreshRow = useCallback(async (id: number) => {
    try {
      const row = (await api.instances.show(id)) as unknown as InstanceRow | null;
      setState((s) => (s ? replaceRow(s, id, row) : s));
    } catch (err) {
      if (err instanceof GpuplaneError && err.status === 404) setState((s) => (s ? replaceRow(s, id, null) : s));
    }
  }, []);

  useEffect(() => {
    const ctrl = new AbortController();
    let lastId: string | undefined;
    const retry = new Backoff({ firstMs: RECONNECT_MS, maxMs: RECONNECT_MAX_MS });
    const run = async () => {
      while (!ctrl.signal.aborted) {
        try {
          if (!stateRef.current || stateRef.current.stale) await load();
          setError(null);
          const res = await api.transport.stream(`/api/v0/instances/events/${lastId ? `?since=${lastId}` : ''}`, ctrl.signal);
          retry.reset();
          for await (const ev of readEvents(res.body!)) {
            if (ev.id !== undefined) lastId = ev.id;
            if (ev.event !== 'instance') continue;
            const e = JSON.parse(ev.data) as StatusEvent;
            setState((s) => (s ? applyEvent(s, e) : s));
            if (!stateRef.current?.rows.has(e.id)) await load();
            else void refreshRow(e.id);
          }
        } catch (err) {
          if (ctrl.signal.aborted) return;
          setError(`live updates paused: ${errorText(err)}; retrying`);
        }
        await new Promise((r) => setTimeout(r, retry.next()));
      }
    };
    void run();
    return () => ctrl.abort();
  }, [load, refreshRow]);

  const loadHistory = useCallback(async (id: number) => {
    try {
      const { events } = await api.instances.history(id);
      setState((s) => (s ? withHistory(s, id, events) : s));
    } catch {
      /* the live timeline stays as it is */
    }
  }, []);
  return { state, error, refreshRow, loadHistory };
}

export default function InstancesPage() {
  const { state, error, refreshRow, loadHistory } = useLiveInstances();
  const { path, search } = useLocation();
  const selected = Number(path.split('/')[2]) || null;
  const [scrollTop, setScrollTop] = useState(0);
  const created = search.get('created');
  const destroyed = search.get('destroyed');
  // The selected instance's whole timeline, from its history; live events extend it.
  const loaded = state !== null;
  useEffect(() => {
    if (selected && loaded) void loadHistory(selected);
  }, [selected, loaded, loadHistory]);

  // Sorted once per change of the list, not once per scroll step.
  const rows = useMemo(() => (state ? sortedRows(state) : []), [state]);
  if (!state) return <section><h1>Instances</h1><ErrorNote error={error} /><p aria-busy="true">Loading…</p></section>;
  const { start, end } = visibleRange(scrollTop, VIEWPORT_ROWS * ROW_HEIGHT, ROW_HEIGHT, rows.length);
  const current = selected ? state.rows.get(selected) : undefined;

  return (
    <section>
      <h1>Instances</h1>
      {created && <p role="status" className="notice">Instance {created} created; it appears below and boots live.</p>}
      {destroyed && <p role="status" className="notice">Instance {destroyed} destroyed: its disk is gone and its billing has stopped.</p>}
      <ErrorNote error={error} />
      {/* The list holds live instances only: destroyed ones are not in it, so "none yet" would be untrue after a
          destroy (issue 29 item 9). Their charges stay on the Billing page. */}
      {rows.length === 0 ? <p>You have no live instances (destroyed ones are not listed; their charges are on the Billing page). Rent one on the Offers page.</p> : (
        <div className="table-wrap" style={{ maxHeight: VIEWPORT_ROWS * ROW_HEIGHT + ROW_HEIGHT, overflowY: 'auto' }}
          onScroll={(e) => setScrollTop(e.currentTarget.scrollTop)} tabIndex={0} role="region" aria-label="Instances table, scrollable">
          <table aria-rowcount={rows.length + 1}>
            <caption className="muted">{counted(rows.length, 'instance')}, updated live</caption>
            <thead>
              <tr aria-rowindex={1}>
                <th scope="col">ID</th>
                <th scope="col">Status</th>
                <th scope="col">Label</th>
                <th scope="col">GPU</th>
                <th scope="col">$/hr</th>
                <th scope="col">Message</th>
              </tr>
            </thead>
            <tbody>
              {start > 0 && <tr aria-hidden="true" style={{ height: start * ROW_HEIGHT }}><td colSpan={6} /></tr>}
              {rows.slice(start, end).map((r, i) => (
                <tr key={r.id} aria-rowindex={start + i + 2} style={{ height: ROW_HEIGHT }} aria-selected={r.id === selected}>
                  <td><a href={`/instances/${r.id}`} onClick={(e) => { e.preventDefault(); navigate(`/instances/${r.id}`); }}>{r.id}</a></td>
                  <td><Badge status={r.actual_status} /></td>
                  <td>{String(r.label ?? '')}</td>
                  <td>{`${r.num_gpus ?? ''}× ${r.gpu_name ?? ''}`}</td>
                  <td>{r.dph_total !== undefined ? Number(r.dph_total).toFixed(4) : ''}</td>
                  <td className="muted">{String(r.status_msg ?? '')}</td>
                </tr>
              ))}
              {end < rows.length && <tr aria-hidden="true" style={{ height: (rows.length - end) * ROW_HEIGHT }}><td colSpan={6} /></tr>}
            </tbody>
          </table>
        </div>
      )}
      {selected && !current && <p>Instance {selected} is not yours or no longer exists.</p>}
      {current && <InstanceDetail key={current.id} row={current} timeline={state.timelines.get(current.id) ?? []} onChanged={() => refreshRow(current.id)} />}
    </section>
  );
}

/** One line to copy, with its copy button (named after what it is). */
function CopyLine({ line }: { line: ConnectLine }) {
  return <li><span className="muted">{line.what}:</span> <code className="cmd">{line.text}</code> <CopyButton text={line.text} label={`Copy ${line.what}`} /></li>;
}

/**
 * Opens a port of the instance in a new tab: the server grants a one-use URL on the port's host name, which sets that
 * host's cookie and goes on into the app (src/ports/). The tab is opened at the click, before the grant's answer, so
 * no popup blocker takes it for an unasked window; it is pointed at the URL once the answer comes (and closed on an
 * error, which is shown beside the port).
 */
async function openPort(id: number, p: PortEntry): Promise<string | null> {
  const tab = window.open('about:blank', '_blank');
  let target: string;
  try {
    const r = await api.transport.request<{ success: boolean; url: string }>('POST', portGrantPath(id, p.port), { body: {} });
    target = r.url;
  } catch (err) {
    // A server without the grant route (404): the port's own URL, where its host asks for a sign-in itself.
    if (!(err instanceof GpuplaneError && err.status === 404)) {
      tab?.close();
      return errorText(err);
    }
    target = p.url;
  }
  if (tab) {
    tab.opener = null;
    tab.location.href = target;
  } else {
    window.open(target, '_blank', 'noopener');
  }
  return null;
}

/**
 * How to reach the instance (issue 32), for what it has: SSH, scp and rsync at the address `vastai ssh-url` gives,
 * `vastai copy` both ways, the Jupyter link, each web port through the server, the terminal. Each line has a copy
 * button; what needs the instance running says so while it does not.
 */
function ConnectPanel({ row }: { row: InstanceRow }) {
  const c = connectInfo(row);
  const direct = c.running ? portLines(row) : [];
  const [portError, setPortError] = useState<{ port: number; msg: string } | null>(null);
  const open = async (p: PortEntry) => {
    setPortError(null);
    const msg = await openPort(row.id, p);
    if (msg) setPortError({ port: p.port, msg });
  };
  return (
    <section aria-labelledby="connect-title">
      <h3 id="connect-title">Connect</h3>
      {!c.running && <p className="muted">Connection details are available while the instance runs.</p>}
      {c.running && c.hasSsh && (c.ssh ? (
        <>
          <h4>SSH</h4>
          <ul aria-label="SSH">{c.ssh.map((l) => <CopyLine key={l.what} line={l} />)}</ul>
          <h4>vastai copy</h4>
          <ul aria-label="vastai copy">{c.copy!.map((l) => <CopyLine key={l.what} line={l} />)}</ul>
        </>
      ) : <p className="muted">SSH has no address yet.</p>)}
      {c.running && c.hasJupyter && (
        <>
          <h4>Jupyter</h4>
          {c.jupyterUrl ? (
            <p>
              <a href={c.jupyterUrl} target="_blank" rel="noopener noreferrer">Open Jupyter</a>{' '}
              <code className="cmd">{c.jupyterUrl}</code> <CopyButton text={c.jupyterUrl} label="Copy Jupyter link" />
            </p>
          ) : <p className="muted">Jupyter's link appears once the instance reports it.</p>}
        </>
      )}
      {c.ports.length > 0 && (
        <>
          <h4>Web ports</h4>
          <ul aria-label="Web ports">
            {c.ports.map((p) => (
              <li key={p.key}>
                <span className="muted">{p.key}{p.jupyter ? ' (Jupyter)' : ''}:</span> <code className="cmd">{p.url}</code>{' '}
                <button type="button" className="small" aria-label={`Open port ${p.port}`} onClick={() => void open(p)}>Open</button>{' '}
                <CopyButton text={p.url} label={`Copy URL of port ${p.port}`} />
                {portError?.port === p.port && <ErrorNote error={portError.msg} />}
              </li>
            ))}
          </ul>
        </>
      )}
      {direct.length > 0 && (
        <>
          <h4>Direct ports</h4>
          <ul aria-label="Ports">
            {direct.map((p) => <li key={p.container + p.address}><code className="cmd">{p.address}</code> → {p.container} <CopyButton text={p.address} label={`Copy address of port ${p.container}`} /></li>)}
          </ul>
        </>
      )}
      <h4>Terminal</h4>
      {c.running
        ? <p><a href={c.terminalHref} onClick={(e) => { e.preventDefault(); navigate(c.terminalHref); }}>Open a terminal</a> <span className="muted">(a shell in the container, in this browser)</span></p>
        : <p className="muted">The terminal is available while the instance runs.</p>}
    </section>
  );
}

type Action = 'stop' | 'start' | 'reboot' | 'destroy';
const CONFIRM: Record<Action, { title: string; message: string; run(id: number): Promise<unknown> }> = {
  stop: { title: 'Stop instance', message: 'Stopping ends its processes; the disk is kept (and still charged).', run: (id) => api.instances.stop(id) },
  start: { title: 'Start instance', message: 'Starting charges the GPUs again while it runs.', run: (id) => api.instances.start(id) },
  reboot: { title: 'Reboot instance', message: 'Rebooting stops and starts the container; running work is interrupted.', run: (id) => api.instances.reboot(id) },
  destroy: { title: 'Destroy instance', message: 'Destroying deletes the instance and its disk. This cannot be undone.', run: (id) => api.instances.destroy(id) },
};

function InstanceDetail({ row, timeline, onChanged }: { row: InstanceRow; timeline: { status: string; at: number; msg: string | null }[]; onChanged(): void }) {
  const [pending, setPending] = useState<Action | null>(null);
  const [busy, setBusy] = useState(false);
  const [actionError, setActionError] = useState<string | null>(null);
  const [logs, setLogs] = useState<string | null>(null);
  const [logsError, setLogsError] = useState<string | null>(null);
  const [label, setLabel] = useState(String(row.label ?? ''));
  const [labelError, setLabelError] = useState<string | null>(null);
  const [bid, setBid] = useState(String(row.bid_price ?? ''));
  const [bidError, setBidError] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const running = row.actual_status === 'running';

  const act = async () => {
    if (!pending) return;
    setBusy(true);
    setActionError(null);
    try {
      await CONFIRM[pending].run(row.id);
      if (pending === 'destroy') navigate(`/instances?destroyed=${row.id}`);
    } catch (err) {
      setActionError(errorText(err));
    } finally {
      setBusy(false);
      setPending(null);
    }
  };
  const readLogs = async () => {
    setLogsError(null);
    try {
      const r = await api.instances.requestLogs(row.id, { tail: 1000 });
      setLogs(await api.transport.getText(r.result_url));
    } catch (err) {
      setLogsError(errorText(err));
    }
  };
  const saveLabel = async (e: FormEvent) => {
    e.preventDefault();
    setLabelError(null);
    try {
      await api.instances.label(row.id, label);
      setSaved('Label saved.');
      onChanged();
    } catch (err) {
      setLabelError(errorText(err));
    }
  };
  const saveBid = async (e: FormEvent) => {
    e.preventDefault();
    setBidError(null);
    try {
      await api.instances.changeBid(row.id, Number(bid));
      setSaved('Bid changed.');
      onChanged();
    } catch (err) {
      setBidError(errorText(err));
    }
  };

  return (
    <section aria-labelledby="detail-title" className="detail">
      <h2 id="detail-title">Instance {row.id} <Badge status={row.actual_status} /></h2>
      {saved && <p role="status" className="notice">{saved}</p>}
      <div className="actions" role="group" aria-label="Instance actions">
        {running ? <button type="button" onClick={() => setPending('stop')}>Stop</button> : <button type="button" onClick={() => setPending('start')}>Start</button>}
        <button type="button" onClick={() => setPending('reboot')} disabled={!running}>Reboot</button>
        <button type="button" className="danger" onClick={() => setPending('destroy')}>Destroy</button>
      </div>
      <ErrorNote error={actionError} />
      {pending && (
        <Confirm open title={`${CONFIRM[pending].title} ${row.id}`} message={CONFIRM[pending].message}
          action={CONFIRM[pending].title.split(' ')[0]} busy={busy} onConfirm={act} onClose={() => setPending(null)} />
      )}

      <h3>Status timeline</h3>
      <ol aria-label="Status timeline">
        {timeline.map((t, i) => <li key={i}><time dateTime={new Date(t.at * 1000).toISOString()}>{when(t.at)}</time> <Badge status={t.status} /> {t.msg && <span className="muted">{t.msg}</span>}</li>)}
      </ol>

      <ConnectPanel row={row} />

      <h3>Logs</h3>
      <button type="button" onClick={readLogs}>{logs === null ? 'Show logs' : 'Refresh logs'}</button>
      <ErrorNote error={logsError} />
      {logs !== null && <pre className="logs" aria-label="Instance logs" tabIndex={0}>{logs || '(no output yet)'}</pre>}

      <h3>Settings</h3>
      <form onSubmit={saveLabel} className="actions">
        <Field label="Instance label" value={label} error={labelError} onChange={(e) => setLabel(e.target.value)} />
        <button type="submit">Save label</button>
      </form>
      {Boolean(row.is_bid) && (
        <form onSubmit={saveBid} className="actions">
          <Field label="Bid price ($/hr)" inputMode="decimal" value={bid} error={bidError} onChange={(e) => setBid(e.target.value)} />
          <button type="submit">Change bid</button>
        </form>
      )}
    </section>
  );
}

/**
 * The terminal (issue 32 item 3): a shell in a running instance's container, in the browser. xterm.js draws it; a
 * WebSocket to the server (src/terminal/) carries keystrokes and pastes as `input` messages, the terminal's size as
 * `resize` messages (on open, and whenever the window or the page's layout changes the fitting size), and the
 * shell's output back as binary messages. The instance is read first, so a stopped or missing one is said in words
 * (a browser cannot read why a WebSocket was refused); once open, the close reason is shown as the server gives it.
 *
 * Copy and paste: selecting text copies nothing by itself; Ctrl+Shift+C (or the browser's Copy, Cmd+C on a Mac)
 * copies the selection, Ctrl+Shift+V, Shift+Insert or Cmd+V pastes; Ctrl+C stays the shell's interrupt.
 */
import { useEffect, useRef, useState } from 'react';
import { Terminal as XTerm } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import '@xterm/xterm/css/xterm.css';
import { api, errorText } from '../lib/api.js';
import { Link, useLocation } from '../lib/router.js';
import { canReconnect, closedText, inputMessages, terminalMessage, terminalSocketUrl } from '../lib/terminal.js';
import { withConstructedStyles } from '../lib/xterm-styles.js';

type Phase =
  | { kind: 'checking' }
  | { kind: 'unavailable'; text: string }
  | { kind: 'connecting' }
  | { kind: 'open' }
  | { kind: 'closed'; text: string; retry: boolean };

export default function TerminalPage() {
  const { search } = useLocation();
  const id = Number(search.get('id'));
  const valid = Number.isSafeInteger(id) && id > 0;
  const [phase, setPhase] = useState<Phase>({ kind: 'checking' });
  const [attempt, setAttempt] = useState(0);
  const screen = useRef<HTMLDivElement>(null);

  useEffect(() => {
    if (!valid || !screen.current) return;
    let disposed = false;
    let ws: WebSocket | null = null;
    const host = screen.current;
    const term = withConstructedStyles(() => new XTerm({ cursorBlink: true, fontSize: 14, scrollback: 5000 }));
    const fit = new FitAddon();
    term.loadAddon(fit);
    withConstructedStyles(() => term.open(host));
    const refit = () => {
      try {
        fit.fit();
      } catch {
        // not laid out yet (zero size): the next resize fits it
      }
    };
    refit();

    // Ctrl+Shift+C copies the selection (Ctrl+C is the shell's); the browser's own copy and paste events are xterm's.
    term.attachCustomKeyEventHandler((e) => {
      if (e.type === 'keydown' && e.ctrlKey && e.shiftKey && (e.key === 'C' || e.key === 'c')) {
        const text = term.getSelection();
        if (text) void navigator.clipboard.writeText(text).catch(() => undefined);
        return false;
      }
      return true;
    });

    const send = (m: Parameters<typeof terminalMessage>[0]) => {
      if (ws?.readyState === WebSocket.OPEN) ws.send(terminalMessage(m));
    };
    // A long paste goes as several messages (the server takes at most 1 MiB in one).
    const sendInput = (data: string) => {
      if (ws?.readyState === WebSocket.OPEN) for (const m of inputMessages(data)) ws.send(m);
    };
    term.onData(sendInput);
    term.onBinary(sendInput);
    term.onResize(({ rows, cols }) => send({ type: 'resize', rows, cols }));
    const observer = new ResizeObserver(() => refit());
    observer.observe(host);
    window.addEventListener('resize', refit);

    void (async () => {
      setPhase({ kind: 'checking' });
      try {
        const inst = (await api.instances.show(id)) as unknown as { actual_status?: string | null } | null;
        if (disposed) return;
        if (!inst) return setPhase({ kind: 'unavailable', text: `Instance ${id} was not found (it may have been destroyed).` });
        if (inst.actual_status !== 'running') {
          return setPhase({ kind: 'unavailable', text: `Instance ${id} is not running (${inst.actual_status ?? 'starting'}): the terminal opens while it runs.` });
        }
      } catch (err) {
        if (!disposed) setPhase({ kind: 'unavailable', text: errorText(err) });
        return;
      }
      setPhase({ kind: 'connecting' });
      let opened = false;
      ws = new WebSocket(terminalSocketUrl(location, id));
      ws.binaryType = 'arraybuffer';
      ws.onopen = () => {
        opened = true;
        setPhase({ kind: 'open' });
        refit();
        send({ type: 'resize', rows: term.rows, cols: term.cols });
        term.focus();
      };
      ws.onmessage = (e) => {
        if (e.data instanceof ArrayBuffer) term.write(new Uint8Array(e.data));
      };
      ws.onclose = (e) => {
        if (disposed) return;
        setPhase({ kind: 'closed', text: closedText(e.code, e.reason, opened), retry: !opened || canReconnect(e.code) });
      };
    })();

    return () => {
      disposed = true;
      observer.disconnect();
      window.removeEventListener('resize', refit);
      ws?.close(1000, 'page closed');
      term.dispose();
    };
  }, [id, valid, attempt]);

  if (!valid) {
    return (
      <section>
        <h1>Terminal</h1>
        <p role="alert" className="error">No instance given: open the terminal from an instance's page.</p>
        <p><Link to="/instances">Back to instances</Link></p>
      </section>
    );
  }

  const status =
    phase.kind === 'checking' ? 'Checking the instance…'
      : phase.kind === 'connecting' ? 'connecting…'
        : phase.kind === 'open' ? 'Connected: a shell as root in the container.'
          : phase.text;

  return (
    <section className="terminal-page">
      <h1>Terminal: instance {id}</h1>
      <p><Link to={`/instances/${id}`}>← Back to instance {id}</Link></p>
      <p role="status" aria-live="polite" className={phase.kind === 'closed' || phase.kind === 'unavailable' ? 'notice' : 'muted'}>{status}</p>
      {(phase.kind === 'unavailable' || (phase.kind === 'closed' && phase.retry)) && (
        <p><button type="button" onClick={() => setAttempt((a) => a + 1)}>{phase.kind === 'closed' ? 'Reconnect' : 'Try again'}</button></p>
      )}
      {/* Sized here (React sets it through the DOM, which the page's policy allows): most of the window's height. */}
      <div className="terminal-screen" ref={screen} role="region" aria-label={`Terminal of instance ${id}`}
        style={{ height: 'min(70vh, 720px)', minHeight: 240, background: '#000', padding: 4, borderRadius: 4, overflow: 'hidden' }} />
      <p className="muted">Copy: select, then Ctrl+Shift+C (Cmd+C on a Mac). Paste: Ctrl+Shift+V, Shift+Insert or Cmd+V. Ctrl+C interrupts the running command.</p>
    </section>
  );
}

/**
 * Shared pieces of the terminal's tests (not a test file itself): a WebSocket client for
 * `/api/v0/instances/{id}/terminal/` that collects the output and the close, or the refusal's status and error
 * object; and a fake `terminal` endpoint for the agent's tunnel (it speaks terminal-wire.ts's frames: it greets,
 * answers a resize with the size, echoes input, and exits on `exit N`), standing in for the agent's shell (tested
 * against Docker in terminal-agent and terminal-e2e).
 */
import type { Duplex } from 'node:stream';
import WebSocket from 'ws';
import { TunnelRefusal, type TunnelHandler } from '../src/agent/agent-tunnel.js';
import { TerminalFrameReader } from '../src/protocol/terminal-wire.js';
import type { TunnelStreamEnd } from '../src/protocol/tunnel-targets.js';

export interface Opened {
  ws: WebSocket;
  /** Everything received so far (binary messages, as text). */
  out(): string;
  /** Whether any message came as text (the server sends binary only). */
  sawText(): boolean;
  input(data: string): void;
  resize(rows: number, cols: number): void;
  /** Until the output matches (a pattern, or a test of the whole output). */
  until(re: RegExp | ((out: string) => boolean), ms?: number): Promise<void>;
  closed: Promise<{ code: number; reason: string }>;
}

export type Attempt = { ok: true; t: Opened } | { ok: false; status: number; body: any };

/** Opens the terminal of instance `id` on `base` (http://host:port) with these headers. */
export function openTerminal(base: string, id: number, headers: Record<string, string>): Promise<Attempt> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/api/v0/instances/${id}/terminal/`, { headers });
    let out = '';
    let text = false;
    const waiters = new Set<() => void>();
    ws.on('message', (d: Buffer, isBinary: boolean) => {
      if (!isBinary) text = true;
      out += d.toString('utf8');
      for (const w of [...waiters]) w();
    });
    const closed = new Promise<{ code: number; reason: string }>((r) => ws.once('close', (code, reason) => r({ code, reason: reason.toString() })));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        let parsed: unknown = body;
        try {
          parsed = JSON.parse(body);
        } catch {
          // not JSON: the test says so
        }
        resolve({ ok: false, status: res.statusCode ?? 0, body: parsed });
      });
    });
    ws.once('error', (err) => reject(err));
    ws.once('open', () => {
      ws.removeAllListeners('error');
      ws.on('error', () => undefined);
      resolve({
        ok: true,
        t: {
          ws, out: () => out, sawText: () => text, closed,
          input: (data) => ws.send(JSON.stringify({ type: 'input', data })),
          resize: (rows, cols) => ws.send(JSON.stringify({ type: 'resize', rows, cols })),
          until: (re, ms = 15_000) => new Promise((res, rej) => {
            const timer = setTimeout(() => {
              waiters.delete(check);
              rej(new Error(`not seen ${re} within ${ms} ms; output (its end): ${JSON.stringify(out.slice(-2000))}`));
            }, ms);
            const check = () => {
              if (!(typeof re === 'function' ? re(out) : re.test(out))) return;
              clearTimeout(timer);
              waiters.delete(check);
              res();
            };
            waiters.add(check);
            check();
          }),
        },
      });
    });
  });
}

/** What the fake endpoint saw: its sessions' ends (hung up by the server, or exited). */
export interface FakeTerminals {
  handler: TunnelHandler;
  /** Terminal streams it was given (a shell each, on a real host). */
  opens: number;
  hungUp: number;
  /** Every input byte it received, in order (the tests check that none of it reached the logs). */
  typed: string;
}

export function fakeTerminals(): FakeTerminals {
  const f: FakeTerminals = { opens: 0, hungUp: 0, typed: '', handler: null as never };
  f.handler = async (target, stream: Duplex): Promise<TunnelStreamEnd> => {
    if (target.kind !== 'terminal') throw new TunnelRefusal(404, `no ${target.kind} endpoint in this test`);
    f.opens++;
    const reader = new TerminalFrameReader();
    stream.write(`welcome to ${target.instanceId}\r\n`);
    return new Promise<TunnelStreamEnd>((resolve) => {
      let done = false;
      const finish = (end: TunnelStreamEnd) => {
        if (done) return;
        done = true;
        resolve(end);
      };
      stream.on('data', (chunk: Buffer) => {
        for (const fr of reader.push(chunk)) {
          if (fr.type === 'resize') {
            stream.write(`size ${fr.rows} ${fr.cols}\r\n`);
            continue;
          }
          const text = fr.data.toString('utf8');
          f.typed += text;
          const exit = /^exit (\d+)$/.exec(text);
          if (exit) {
            stream.end(`bye\r\n`);
            finish({ endpoint: 'terminal', exit: exit[1] });
          } else stream.write(`echo:${text}\r\n`);
        }
      });
      stream.on('error', () => undefined);
      stream.once('close', () => {
        if (!done) f.hungUp++;
        finish({ endpoint: 'terminal', exit: 'none' });
      });
    });
  };
  return f;
}

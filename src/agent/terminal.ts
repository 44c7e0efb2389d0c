/**
 * The `terminal` tunnel target (issue 32: the console's terminal): root's login shell in the instance's container on a
 * TTY (ssh/login-shell.ts, the same shell the agent's SSH server gives: bash where /etc/passwd names it, /bin/sh in
 * any other image), spoken in terminal-wire.ts's frames. From the server: input and resize frames, applied in the
 * order they came (input sent after a resize waits until Docker has resized the TTY, so `stty size` typed after it
 * sees the new size); back to it: the TTY's output, raw. The stream ends with the shell (trailer `exit`: its status,
 * or `none` when Docker cannot say); when the server's side goes first (the renter closed the page, the instance
 * stopped), the shell is hung up (SIGHUP), as sshd does when a session's TTY closes.
 *
 * What is typed is never logged: the log line at the end has the instance, the source, the status, the duration and
 * byte counts only.
 */
import type { Duplex } from 'node:stream';
import { TerminalFrameReader, type TerminalFrame } from '../protocol/terminal-wire.js';
import type { TunnelStreamEnd, TunnelStreamInfo } from '../protocol/tunnel-targets.js';
import type { AgentLog } from './agent-log.js';
import type { ContainerAccess, ExecProcess, InstanceContainer } from './ssh/container-access.js';
import { loginShellArgv, SESSION_PATH } from './ssh/login-shell.js';

/** The terminal the console runs (xterm.js) understands 256 colours. */
export const TERMINAL_TERM = 'xterm-256color';

/** The shell's environment: what a root login over SSH gets (not the container's own variables), with the console's TERM. */
export const TERMINAL_VARS: readonly string[] = ['HOME=/root', 'USER=root', 'LOGNAME=root', `PATH=${SESSION_PATH}`, `TERM=${TERMINAL_TERM}`, 'COLORTERM=truecolor'];

/** Starts the shell (a failure here is the caller's refusal: nothing was read from the stream yet). */
export function startTerminalShell(access: ContainerAccess, c: InstanceContainer): Promise<ExecProcess> {
  return access.exec(c.id, { argv: loginShellArgv({ mode: 'shell', vars: TERMINAL_VARS }), tty: true });
}

export interface TerminalSession {
  instanceId: number;
  /** Ends the session now: the shell is hung up, the stream ends. */
  end(reason: string): void;
}

export interface TerminalContext {
  instanceId: number;
  info: TunnelStreamInfo;
  log: AgentLog;
  now(): number;
  /** Told of the live session when it starts and when it ends (the data plane ends them when the agent stops). */
  track(s: TerminalSession, alive: boolean): void;
}

/** Serves the stream with the started shell until either ends; resolves with the trailers. */
export function serveTerminal(stream: Duplex, p: ExecProcess, ctx: TerminalContext): Promise<TunnelStreamEnd> {
  const started = ctx.now();
  const reader = new TerminalFrameReader();
  let bytesIn = 0;
  let bytesOut = 0;
  let hungUp = false;
  let endedBy: string | null = null;
  /** Settles once every frame received so far is applied (in order). */
  let applying: Promise<void> = Promise.resolve();

  const hangUp = () => {
    if (hungUp) return;
    hungUp = true;
    void p.hangup().catch(() => undefined).finally(() => p.destroy());
  };
  const session: TerminalSession = {
    instanceId: ctx.instanceId,
    end(reason) {
      endedBy ??= reason;
      hangUp();
      stream.destroy();
    },
  };
  ctx.track(session, true);

  const apply = async (f: TerminalFrame) => {
    if (hungUp) return;
    if (f.type === 'resize') return p.resize(f.rows, f.cols);
    bytesIn += f.data.length;
    if (!p.stdin.write(f.data)) await new Promise<void>((r) => p.stdin.once('drain', r));
  };

  stream.on('data', (chunk: Buffer) => {
    let frames: TerminalFrame[];
    try {
      frames = reader.push(chunk);
    } catch (err) {
      session.end(`bad frame from the server: ${(err as Error).message}`);
      return;
    }
    if (frames.length === 0) return;
    // A full TTY input holds the stream back, so a long paste cannot pile up in memory here.
    stream.pause();
    applying = frames.reduce((prev, f) => prev.then(() => apply(f)), applying).then(() => {
      if (!stream.destroyed) stream.resume();
    });
  });
  // A TTY has no end of input to pass on: the server's side ending, closing or failing is the session's end.
  stream.on('error', hangUp);
  stream.once('end', hangUp);
  stream.once('close', hangUp);
  p.stdin.on('error', () => undefined);
  p.stdout.on('data', (d: Buffer) => (bytesOut += d.length));
  p.stdout.pipe(stream, { end: false });
  p.stderr.resume();

  return new Promise<TunnelStreamEnd>((resolve) => {
    let done = false;
    const finish = async () => {
      if (done) return;
      done = true;
      const code = await p.exit;
      hangUp();
      ctx.track(session, false);
      const status = code === null ? 'none' : String(code);
      ctx.log.info(
        {
          instance_id: ctx.instanceId, source: ctx.info.source, exit: status, ended_by: endedBy ?? (stream.destroyed ? 'server' : 'shell'),
          duration_s: Math.round((ctx.now() - started) / 100) / 10, bytes_in: bytesIn, bytes_out: bytesOut,
        },
        'terminal session ended',
      );
      resolve({ endpoint: 'terminal', exit: status });
    };
    p.stdout.once('end', () => void finish());
    p.stdout.once('close', () => void finish());
  });
}

/**
 * The console's terminal (issue 32 item 3): a WebSocket at `GET /api/v0/instances/{id}/terminal/` on the API's own
 * host, to root's login shell in the instance's container (through its host agent's tunnel, the `terminal` target).
 * What the browser and the server say to each other, kept free of imports so the web console reads the same
 * constants (console/src/pages/Terminal.tsx).
 *
 * Browser → server: JSON text messages, `{"type":"input","data":"…"}` (keystrokes, pasted text) and
 * `{"type":"resize","rows":N,"cols":N}`. Server → browser: the TTY's output as binary messages, raw bytes.
 *
 * A refusal before the upgrade completes is the API's error object with its status (401, 403, 404, 409, 502), which
 * an API client reads; a browser's WebSocket cannot, so the console checks the instance first, and whatever ends an
 * open terminal says why in the close frame: one of the codes below, with a sentence as its reason.
 */

/** The path, with `{id}` the instance. */
export const TERMINAL_PATH = /^\/api\/v0\/instances\/([1-9][0-9]{0,14})\/terminal\/?(\?.*)?$/;

/** The path of an instance's terminal. */
export function terminalPath(instanceId: number): string {
  return `/api/v0/instances/${instanceId}/terminal/`;
}

export const TERMINAL_CLOSE = {
  /** The shell exited; the reason is `exit status N` (or `the shell ended` when the host could not say). */
  exited: 1000,
  /** The server is shutting down. */
  serverClosing: 1001,
  /** A message the server does not take (not JSON, an unknown type, a size out of range). */
  badMessage: 1008,
  /** Something failed on the server's side. */
  internal: 1011,
  /** The session's credential is no longer valid (signed out, key revoked, access taken away). */
  signedOut: 4401,
  /** The instance was destroyed. */
  destroyed: 4404,
  /** The instance stopped (or is no longer running for another reason: its host went offline). */
  stopped: 4409,
  /** The host's connection to the server (its tunnel) was lost. */
  hostLost: 4502,
} as const;

export type TerminalCloseCode = (typeof TERMINAL_CLOSE)[keyof typeof TERMINAL_CLOSE];

/** The largest message the browser may send (a paste is sent as one input message): 1 MiB. */
export const TERMINAL_MESSAGE_MAX = 1024 * 1024;
/** Rows and columns accepted in a resize. */
export const TERMINAL_SIZE_MAX = 1000;

export type TerminalClientMessage = { type: 'input'; data: string } | { type: 'resize'; rows: number; cols: number };

/** A browser's message, or a sentence saying why it is not one. */
export function parseClientMessage(text: string): TerminalClientMessage | string {
  let m: unknown;
  try {
    m = JSON.parse(text);
  } catch {
    return 'a terminal message is JSON';
  }
  if (typeof m !== 'object' || m === null) return 'a terminal message is a JSON object';
  const o = m as Record<string, unknown>;
  if (o.type === 'input') {
    return typeof o.data === 'string' ? { type: 'input', data: o.data } : 'an input message has "data", a string';
  }
  if (o.type === 'resize') {
    const ok = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= TERMINAL_SIZE_MAX;
    return ok(o.rows) && ok(o.cols) ? { type: 'resize', rows: o.rows, cols: o.cols } : `a resize message has "rows" and "cols", whole numbers from 1 to ${TERMINAL_SIZE_MAX}`;
  }
  return 'a terminal message\'s "type" is "input" or "resize"';
}

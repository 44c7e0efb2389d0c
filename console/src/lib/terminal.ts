/**
 * The terminal page's logic without React or xterm (console/src/pages/Terminal.tsx): where its WebSocket goes, what
 * it sends, and what to say when it closes. The wire is the server's (src/terminal/terminal-contract.ts).
 */
import { TERMINAL_CLOSE, terminalPath, type TerminalClientMessage } from '../../../src/terminal/terminal-contract.js';

/** The WebSocket URL of instance `id`'s terminal on the page's own origin (ws: or wss: as the page is served). */
export function terminalSocketUrl(page: { protocol: string; host: string }, id: number): string {
  return `${page.protocol === 'https:' ? 'wss:' : 'ws:'}//${page.host}${terminalPath(id)}`;
}

/** Characters per input message: a paste of any size stays far under the server's message limit (1 MiB). */
export const INPUT_CHUNK_CHARS = 64 * 1024;

/** Input as messages of at most INPUT_CHUNK_CHARS characters, never splitting a surrogate pair (an emoji). */
export function inputMessages(data: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < data.length;) {
    let end = Math.min(data.length, i + INPUT_CHUNK_CHARS);
    const last = data.charCodeAt(end - 1);
    if (end < data.length && last >= 0xd800 && last <= 0xdbff) end--;
    out.push(terminalMessage({ type: 'input', data: data.slice(i, end) }));
    i = end;
  }
  return out;
}

/** A message for the server. */
export function terminalMessage(m: TerminalClientMessage): string {
  return JSON.stringify(m);
}

/**
 * What the page says once the terminal has closed. `opened`: whether it ever opened. A refusal before opening
 * reaches a browser as code 1006 with no reason (it cannot read the server's error object), so the page says what
 * usually causes one.
 */
export function closedText(code: number, reason: string, opened: boolean): string {
  if (!opened) {
    return 'The terminal could not be opened: you may be signed out, the instance may not be running, or its host may be offline. Check the instance page, then try again.';
  }
  if (reason) return `Closed: ${reason}.`;
  if (code === TERMINAL_CLOSE.serverClosing) return 'Closed: the server is restarting.';
  return `Closed: the connection was lost (code ${code}).`;
}

/** Whether a closed terminal is worth reconnecting (the shell exited or the connection dropped, not a refusal). */
export function canReconnect(code: number): boolean {
  return code !== TERMINAL_CLOSE.destroyed && code !== TERMINAL_CLOSE.signedOut;
}

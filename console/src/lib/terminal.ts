/**
 * The terminal page's logic without React or xterm (console/src/pages/Terminal.tsx): where its WebSocket goes, what
 * it sends, and what to say when it closes. The wire is the server's (src/terminal/terminal-contract.ts).
 */
import { TERMINAL_CLOSE, terminalPath, type TerminalClientMessage } from '../../../src/terminal/terminal-contract.js';

/** The WebSocket URL of instance `id`'s terminal on the page's own origin (ws: or wss: as the page is served). */
export function terminalSocketUrl(page: { protocol: string; host: string }, id: number): string {
  return `${page.protocol === 'https:' ? 'wss:' : 'ws:'}//${page.host}${terminalPath(id)}`;
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

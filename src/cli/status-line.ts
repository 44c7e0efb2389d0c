/**
 * The live status line of long waits: on a terminal, one line rewritten in place every second with the state and the
 * elapsed time; elsewhere (pipes, CI logs), one line per change of state.
 */
import type { CliStream } from './io.js';

const TICK_MS = 1000;

export interface StatusLine {
  update(state: string): void;
  /** Leaves the last state on screen and ends the line. */
  done(final?: string): void;
}

export function statusLine(label: string, stream: CliStream): StatusLine {
  const started = performance.now();
  const tty = stream.isTTY === true;
  let state = 'waiting';
  const elapsed = () => {
    const s = Math.floor((performance.now() - started) / 1000);
    return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  };
  const text = () => `${label}: ${state} (${elapsed()})`;
  const draw = () => stream.write(`\r\x1b[2K${text()}`);
  const timer = tty ? setInterval(draw, TICK_MS) : undefined;
  timer?.unref();
  if (tty) draw();
  return {
    update(next: string) {
      if (next === state) return;
      state = next;
      if (tty) draw();
      else stream.write(`${text()}\n`);
    },
    done(final?: string) {
      if (timer) clearInterval(timer);
      const changed = final !== undefined && final !== state;
      if (final !== undefined) state = final;
      if (tty) stream.write(`\r\x1b[2K${text()}\n`);
      else if (changed) stream.write(`${text()}\n`);
    },
  };
}

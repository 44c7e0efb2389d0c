/**
 * Where one run of the CLI reads and writes: the process's streams and environment (`gpuplane …`), or a test's, which
 * runs the CLI in its own process with `runCli(argv, io)`. Nothing in src/cli writes to process.stdout or sets
 * process.exitCode itself: the run collects its exit code, and main.ts hands it to the process.
 */
import type { Command } from 'commander';
import type { PasswordIO } from './password.js';

/** An output stream: a terminal (isTTY, columns), a pipe, or a test's collector. */
export interface CliStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface CliIO {
  stdout: CliStream;
  stderr: CliStream;
  stdin: PasswordIO['input'];
  env: NodeJS.ProcessEnv;
  /**
   * Calls `listener` on an interrupt (Ctrl-C, SIGINT) instead of ending the run at once, until the returned function
   * is called: a wait stops and says how to resume. Absent: nothing interrupts the run.
   */
  onInterrupt?(listener: () => void): () => void;
}

export const processIO = (): CliIO => ({
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  onInterrupt(listener) {
    process.once('SIGINT', listener);
    return () => void process.off('SIGINT', listener);
  },
});

/** The state of one run: its IO, its exit code so far, and the words after `create instance … --args`. */
export class CliRun {
  exitCode = 0;
  constructor(
    readonly io: CliIO,
    /** The words after `--args`, which the vastai client takes verbatim (options included). */
    readonly argsRemainder?: string[],
  ) {}
}

const runs = new WeakMap<Command, CliRun>();

export function bindRun(program: Command, run: CliRun): void {
  runs.set(program, run);
}

/** The run a command (or any of its subcommands) belongs to. */
export function runOf(cmd: Command): CliRun {
  let c: Command | null = cmd;
  while (c) {
    const run = runs.get(c);
    if (run) return run;
    c = c.parent;
  }
  throw new Error('a CLI command ran outside runCli');
}

/**
 * Passwords on the command line: a password given as an argument lands in the shell history and in the process list
 * (`ps`), so the commands that take one ask for it on the terminal without echo, or read it with `--password-stdin`
 * (as `docker login` does). `--password` still works, with a warning.
 */
import { UsageError } from './context.js';

/** The terminal side of a prompt: the input in raw mode (no echo) while the password is typed. */
export interface PromptInput {
  isTTY?: boolean;
  isRaw?: boolean;
  setRawMode?(raw: boolean): unknown;
  setEncoding(encoding: BufferEncoding): unknown;
  on(event: 'data', listener: (chunk: string | Buffer) => void): unknown;
  removeListener(event: 'data', listener: (chunk: string | Buffer) => void): unknown;
  resume(): unknown;
  pause(): unknown;
}

export interface PasswordIO {
  input: PromptInput & NodeJS.ReadableStream;
  /** Where the prompt and the warning go: standard error, so that standard output stays the command's reply. */
  output: { write(text: string): unknown };
}

export class PromptCancelled extends UsageError {}

const ENTER = new Set(['\r', '\n']);
const CTRL_C = '\u0003';
const CTRL_D = '\u0004';
const CTRL_U = '\u0015';
const BACKSPACE = new Set(['\u007f', '\b']);
const ESC = '\u001b';

/**
 * Asks for a secret on a terminal. Raw mode turns the terminal's echo off before the question is written, so nothing
 * typed after the prompt appears. Enter (or Ctrl-D) ends it, Backspace and Ctrl-U edit it, Ctrl-C cancels; escape
 * sequences (arrow keys) are ignored.
 */
export function promptHidden(question: string, io: PasswordIO): Promise<string> {
  const { input, output } = io;
  if (!input.setRawMode) return Promise.reject(new UsageError('cannot turn off the echo of this terminal: use --password-stdin'));
  const wasRaw = input.isRaw === true;
  input.setRawMode(true);
  input.setEncoding('utf8');
  output.write(question);
  return new Promise((resolve, reject) => {
    let value = '';
    const finish = () => {
      input.removeListener('data', onData);
      input.setRawMode!(wasRaw);
      input.pause();
      output.write('\n');
    };
    function onData(chunk: string | Buffer) {
      for (const ch of String(chunk)) {
        if (ENTER.has(ch) || ch === CTRL_D) {
          finish();
          return resolve(value);
        }
        if (ch === CTRL_C) {
          finish();
          return reject(new PromptCancelled('cancelled'));
        }
        if (ch === ESC) return; // the rest of the chunk is the sequence
        if (BACKSPACE.has(ch)) value = [...value].slice(0, -1).join('');
        else if (ch === CTRL_U) value = '';
        else if (ch >= ' ') value += ch;
      }
    }
    input.on('data', onData);
    input.resume();
  });
}

/** Everything on standard input, less one final line break (`echo "$PW" | …` adds one). */
export async function readStdin(input: NodeJS.ReadableStream): Promise<string> {
  let text = '';
  input.setEncoding('utf8');
  for await (const chunk of input) text += String(chunk);
  return text.replace(/\r?\n$/, '');
}

export interface PasswordOpts {
  password?: string;
  passwordStdin?: boolean;
}

/** The password from `--password-stdin`, the terminal prompt, or (with a warning) `--password`. */
export async function resolvePassword(o: PasswordOpts, io: PasswordIO): Promise<string> {
  if (o.password !== undefined && o.passwordStdin) throw new UsageError('give one of --password and --password-stdin');
  let password: string;
  if (o.passwordStdin) password = await readStdin(io.input);
  else if (o.password !== undefined) {
    io.output.write('warning: a password given with --password can be read from your shell history and the process list; use --password-stdin, or leave it out to be asked\n');
    password = o.password;
  } else if (io.input.isTTY) password = await promptHidden('Password: ', io);
  else throw new UsageError('no password: pipe it in with --password-stdin, or run on a terminal to be asked for it');
  if (password === '') throw new UsageError('the password is empty');
  return password;
}

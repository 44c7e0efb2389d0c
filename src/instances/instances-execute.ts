/**
 * `execute` (docs/spec/client-compat-more.md §c "Execute a command"): the command a renter may run in an instance,
 * read into argv for the instance's host (instances-hosts-contract.ts). A pure function: no I/O, no clock.
 *
 * The vastai client's help lists `ls`, `rm` and `du` only; so does gpuplane. The command runs without a shell (a real
 * host's agent execs argv in the container, working directory `/`), so shell syntax would not do what it says: it is
 * refused, with a 400 naming what is wrong, instead of being passed on as literal text.
 */
import { COMMAND_MAX_WORDS } from '../protocol/agent-protocol-schemas.js';
import { badRequest } from '../platform/errors.js';

export const EXECUTE_COMMANDS = ['ls', 'rm', 'du'] as const;
export const COMMAND_MAX_CHARS = 4096;
/** Characters with a meaning to a shell (chaining, redirection, expansion, globbing), refused outside quotes. */
const SHELL_SYNTAX = /[;|&<>$`(){}*?[\]~!#\\]/;
/** An option: `-l`, `-d2`, `--max-depth=2`, `-h`. */
const OPTION = /^--?[A-Za-z0-9][A-Za-z0-9=_.,-]*$/;
/** Options that would take `rm` past its own safety nets. */
const REFUSED_OPTIONS = new Set(['--no-preserve-root']);

const allowed = (w: string): w is (typeof EXECUTE_COMMANDS)[number] => (EXECUTE_COMMANDS as readonly string[]).includes(w);

/**
 * Splits the command into words: whitespace separates them, and single or double quotes keep a path with spaces (or
 * one of the characters above) in one word. Returns argv, or throws 400 `bad_request` saying what is not allowed.
 * Not protocol/shell-words.ts, whose rule reads every line: this one refuses what a shell would have interpreted
 * (outside quotes) and an unclosed quote, and it must see where the quotes were to do so.
 */
export function parseCommand(text: string): string[] {
  if (text.length > COMMAND_MAX_CHARS) throw badRequest(`body.command is longer than ${COMMAND_MAX_CHARS} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(text)) throw badRequest('body.command must be one line of text (no control characters)');
  const words: string[] = [];
  let cur = '';
  let has = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "'" || c === '"') {
      const end = text.indexOf(c, i + 1);
      if (end < 0) throw badRequest(`body.command has an unclosed ${c} quote`);
      cur += text.slice(i + 1, end);
      i = end;
      has = true;
    } else if (c === ' ' || c === '\t') {
      if (has) words.push(cur);
      cur = '';
      has = false;
    } else if (SHELL_SYNTAX.test(c)) {
      throw badRequest(
        `body.command: ${JSON.stringify(c)} is shell syntax, and commands run without a shell; ` +
          'give one ls, rm or du with options and paths (quote a path that contains such a character)',
      );
    } else {
      cur += c;
      has = true;
    }
  }
  if (has) words.push(cur);
  if (words.length === 0) throw badRequest('body.command is empty: give ls, rm or du with options and paths');
  if (words.length > COMMAND_MAX_WORDS) throw badRequest(`body.command has more than ${COMMAND_MAX_WORDS} words`);
  const [cmd, ...args] = words;
  if (!allowed(cmd)) {
    throw badRequest(`body.command: ${JSON.stringify(cmd)} is not allowed; execute runs only ${EXECUTE_COMMANDS.join(', ')}`);
  }
  for (const a of args) {
    if (a.startsWith('-') && a !== '-' && a !== '--') {
      if (!OPTION.test(a)) throw badRequest(`body.command: ${JSON.stringify(a)} is not an option ${cmd} can take`);
      if (REFUSED_OPTIONS.has(a)) throw badRequest(`body.command: ${a} is not allowed`);
    }
    if (a === '') throw badRequest('body.command: an empty path is not allowed');
  }
  if (cmd === 'rm' && !args.some((a) => !a.startsWith('-'))) throw badRequest('body.command: rm needs a path');
  return words;
}

/**
 * `execute` (docs/spec/client-compat-more.md §c "Execute a command"): the command a renter may run in an instance,
 * read into argv, and what the emulator's simulated container prints for it. Pure functions: no I/O, no clock.
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

/**
 * The emulator's container, as `ls`, `du` and `rm` see it: the usual top-level directories, all empty, and nothing
 * else. It is fixed (a simulated host has no container to change), so `rm` refuses, saying so.
 */
export const SIMULATED_DIRS = ['bin', 'dev', 'etc', 'home', 'lib', 'opt', 'proc', 'root', 'run', 'sys', 'tmp', 'usr', 'var', 'workspace'];
/** A directory's own size, KB, as `du` counts it on ext4/overlay. */
const DIR_KB = 4;

/** `rel` resolved against `/` (the command's working directory), without `.`/`..` segments. */
function resolvePath(rel: string): string {
  const parts: string[] = [];
  for (const p of rel.split('/')) {
    if (p === '' || p === '.') continue;
    if (p === '..') parts.pop();
    else parts.push(p);
  }
  return `/${parts.join('/')}`;
}

const isDir = (abs: string) => abs === '/' || SIMULATED_DIRS.includes(abs.slice(1));

function lsLong(names: string[], mtime: string): string[] {
  return [`total ${names.length * DIR_KB}`, ...names.map((n) => `drwxr-xr-x    2 root     root          4096 ${mtime} ${n}`)];
}

/** `Jan  1 00:00` of a Unix time, as `ls -l` prints a recent date (UTC). */
function lsDate(at: number): string {
  const d = new Date(at * 1000);
  const month = d.toLocaleString('en-US', { month: 'short', timeZone: 'UTC' });
  const hh = String(d.getUTCHours()).padStart(2, '0');
  const mm = String(d.getUTCMinutes()).padStart(2, '0');
  return `${month} ${String(d.getUTCDate()).padStart(2, ' ')} ${hh}:${mm}`;
}

/**
 * What the simulated container prints for argv (from parseCommand), the way busybox would, errors included.
 * `createdAt`: the instance's creation time, the directories' modification time.
 */
export function simulatedOutput(argv: string[], createdAt: number): string {
  const [cmd, ...args] = argv;
  const opts = args.filter((a) => a.startsWith('-') && a.length > 1);
  const flags = new Set(opts.filter((o) => !o.startsWith('--')).flatMap((o) => [...o.slice(1)]));
  const paths = args.filter((a) => !a.startsWith('-') || a === '-');
  const out: string[] = [];
  if (cmd === 'ls') {
    const targets = paths.length ? paths : ['.'];
    const long = flags.has('l') || flags.has('o') || flags.has('g');
    const many = targets.length > 1;
    const found = targets.filter((p) => isDir(resolvePath(p)));
    for (const p of targets) if (!isDir(resolvePath(p))) out.push(`ls: ${p}: No such file or directory`);
    found.forEach((p, i) => {
      const names = resolvePath(p) === '/' ? (flags.has('r') ? [...SIMULATED_DIRS].reverse() : SIMULATED_DIRS) : [];
      if (many) out.push(`${i > 0 ? '\n' : ''}${p}:`);
      if (long) out.push(...lsLong(names, lsDate(createdAt)));
      else out.push(...names);
    });
  } else if (cmd === 'du') {
    const human = flags.has('h');
    const size = (kb: number) => (human ? `${kb.toFixed(1)}K` : String(kb));
    const summary = flags.has('s') || opts.some((o) => /^(-d0|--max-depth=0|--summarize)$/.test(o));
    for (const p of paths.length ? paths : ['.']) {
      const abs = resolvePath(p);
      if (!isDir(abs)) {
        out.push(`du: ${p}: No such file or directory`);
        continue;
      }
      const shown = p.endsWith('/') && p !== '/' ? p.slice(0, -1) : p;
      if (abs === '/') {
        if (!summary) for (const d of SIMULATED_DIRS) out.push(`${size(DIR_KB)}\t${shown === '/' ? '' : `${shown}`}/${d}`);
        out.push(`${size(DIR_KB * (SIMULATED_DIRS.length + 1))}\t${shown}`);
      } else out.push(`${size(DIR_KB)}\t${shown}`);
    }
  } else {
    for (const p of paths) {
      const abs = resolvePath(p);
      if (!isDir(abs)) out.push(`rm: can't remove '${p}': No such file or directory`);
      else if (!flags.has('r') && !flags.has('R') && !opts.includes('--recursive')) out.push(`rm: '${p}' is a directory`);
      else out.push(`rm: can't remove '${p}': the emulator's simulated container is read-only (a real host's is not)`);
    }
  }
  return out.length ? `${out.join('\n')}\n` : '';
}

/**
 * What a simulated host's container prints for `execute` (docs/spec/client-compat-more.md §c): a simulated host has no
 * container to run a command in, so it answers as busybox would in an empty one. The command comes parsed and checked
 * (instances-execute.ts `parseCommand`: ls, rm or du with options and paths). Pure functions: no I/O, no clock.
 */

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

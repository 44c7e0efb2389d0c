/**
 * The shell blocks of README.md, for test/readme.test.ts: which ones a test can run (curl, the gpuplane CLI, shell
 * variables), and which ones the README marks as not run, with the reason, in an HTML comment on the line before:
 *
 *   <!-- not run by test/readme.test.ts: it installs packages -->
 *
 * A block is marked exactly when the test cannot run it, so an example can neither rot unseen nor be skipped for no
 * reason.
 */

export const MARK = /^<!--\s*not run by test\/readme\.test\.ts:\s*(.+?)\s*-->$/;
/** Fence languages read as shell (a fence without a language too). */
const SHELL = new Set(['', 'sh', 'bash', 'shell', 'console', 'zsh']);

export interface Block {
  /** 1-based line of the opening fence. */
  line: number;
  text: string;
  /** Why the README says the test does not run it, when it says so. */
  mark?: string;
}

/** The shell blocks of a Markdown text. */
export function shellBlocks(markdown: string): Block[] {
  const lines = markdown.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```\s*([\w-]*)\s*$/.exec(lines[i]);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && /^```\s*$/.test(l));
    if (end < 0) throw new Error(`README line ${i + 1}: a fence that never closes`);
    if (SHELL.has(open[1])) {
      let before = i - 1;
      while (before >= 0 && lines[before].trim() === '') before--;
      const mark = before >= 0 ? MARK.exec(lines[before].trim())?.[1] : undefined;
      blocks.push({ line: i + 1, text: lines.slice(i + 1, end).join('\n'), ...(mark ? { mark } : {}) });
    }
    i = end;
  }
  return blocks;
}

/** A line without its `# comment` (a `#` that starts a word outside quotes). */
function stripComment(line: string): string {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === quote) quote = null;
      else if (c === '\\' && quote === '"') i++;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]))) return line.slice(0, i);
  }
  return line;
}

/** Splits a command line at `&&`, `||`, `;`, `|` and `&` outside quotes; a trailing `&` (background) is kept as a part. */
function parts(command: string): string[] {
  const out: string[] = [];
  let quote: string | null = null;
  let cur = '';
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (quote) {
      if (c === quote) quote = null;
      cur += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      cur += c;
    } else if (c === ';' || c === '|' || c === '&') {
      out.push(cur.trim());
      if (c === '&' && command[i + 1] !== '&') out.push('&');
      if ((c === '&' || c === '|') && command[i + 1] === c) i++;
      cur = '';
    } else cur += c;
  }
  out.push(cur.trim());
  return out.filter((p) => p !== '');
}

/** The commands of a block: comments dropped, `\` continuations joined. */
export function commandsOf(text: string): string[] {
  const out: string[] = [];
  let cur = '';
  for (const raw of text.split('\n')) {
    const line = stripComment(raw).trimEnd();
    if (line.endsWith('\\')) {
      cur += `${line.slice(0, -1)} `;
      continue;
    }
    cur += line;
    if (cur.trim() !== '') out.push(cur.trim());
    cur = '';
  }
  if (cur.trim() !== '') out.push(cur.trim());
  return out;
}

/**
 * What the test can run: a shell variable (exported or not: `export VAST_URL=…` points the vastai client), curl, and
 * the gpuplane CLI's client commands (not `serve`, which stays up).
 */
const RUNNABLE = [
  /^(export\s+)?[A-Za-z_]\w*=("[^"]*"|'[^']*'|[^\s'"]*)$/,
  /^curl\s/,
  /^(npx gpuplane|gpuplane|node bin\/gpuplane\.mjs)(\s+(?!serve\b)\S.*)?$/,
];

/** The parts of a block's commands the test cannot run (none: it runs the block). */
export function unrunnable(text: string): string[] {
  return commandsOf(text).flatMap(parts).filter((p) => !RUNNABLE.some((r) => r.test(p)));
}

/** What is wrong with the marks: a block the test cannot run without a mark, or a mark on a block it can run. */
export function markProblems(blocks: Block[]): string[] {
  return blocks.flatMap((b) => {
    const cannot = unrunnable(b.text);
    if (!b.mark && cannot.length) {
      return [`README line ${b.line}: the test cannot run ${cannot.map((c) => JSON.stringify(c)).join(', ')}: make the example runnable, or mark the block with <!-- not run by test/readme.test.ts: why -->`];
    }
    if (b.mark && !cannot.length) return [`README line ${b.line}: marked as not run (${b.mark}), but the test can run it: remove the mark`];
    return [];
  });
}

/**
 * The layout of `--help`: Commander pads every term (`remove-machine-from-cluster <cluster_id> <machine_id>
 * [new_manager_id]`, 70 characters) to the longest one of its list, so on a 100-column terminal every description
 * began at column 74 and wrapped at once, a word or two per line (issue 29 item 10). Here the term column is capped:
 * a longer term gets a line of its own, its description below it at the column the others use. The texts the commands
 * add by hand (field lists, notes) are wrapped to the same width as they are written out (`fitHelpText`).
 */
import { Help, type Command } from 'commander';

/** Commander's help width when the stream is not a terminal (a pipe, a file, a test). */
export const DEFAULT_HELP_WIDTH = 80;

/** The width help fits on a stream: the terminal's, else Commander's default. */
export function helpWidth(stream: { isTTY?: boolean; columns?: number }): number {
  return stream.isTTY && stream.columns && stream.columns > 0 ? stream.columns : DEFAULT_HELP_WIDTH;
}

/** The widest the term column grows, in characters. */
export const MAX_TERM_COLUMN = 32;
/** Room a description keeps beside the term column: below this, the column narrows further. */
const MIN_DESCRIPTION_COLUMNS = 40;
/** Commander's indent before a term, and its gap between term and description. */
const ITEM_INDENT = 2;
const SPACER = 2;

/** The term column for this list: its longest term, at most MAX_TERM_COLUMN, narrower on a narrow terminal. */
export function termColumn(longest: number, helpWidth: number): number {
  const room = helpWidth - ITEM_INDENT - SPACER - MIN_DESCRIPTION_COLUMNS;
  return Math.max(1, Math.min(longest, MAX_TERM_COLUMN, room));
}

/** Help settings for `Command.configureHelp`: the capped term column, and long terms on their own line. */
export const helpLayout: Partial<Help> = {
  padWidth(cmd: Command, helper: Help): number {
    return termColumn(Help.prototype.padWidth.call(helper, cmd, helper), helper.helpWidth ?? DEFAULT_HELP_WIDTH);
  },
  formatItem(term: string, termWidth: number, description: string, helper: Help): string {
    if (!description || helper.displayWidth(term) <= termWidth) return Help.prototype.formatItem.call(helper, term, termWidth, description, helper);
    // A term wider than the column: on its own line, its description on the next ones, aligned with the others'.
    const below = Help.prototype.formatItem.call(helper, '', termWidth, description, helper);
    return `${' '.repeat(ITEM_INDENT)}${term}\n${below}`;
  },
};

/** A help line that is a command to copy (an example): never broken, or it would not paste. */
const EXAMPLE = /^\s*(\$ )?gpuplane /;
/** A word, with a `backquoted command` kept whole (a hint must stay one piece to be copied). */
const WORD = /`[^`]*`\S*|\S+/g;
/** A line that starts a statement of its own (`Units: …`, `Fields:`): never joined to the line before. */
const LABEL = /^\s*[A-Z][\w ()-]*:/;
/** A hanging indent deeper than this is not taken from the line (its words would have no room). */
const MAX_HANGING_INDENT_SHARE = 0.6;

/** The indent of a line's text, and where its continuation lines up: after its last gap of two or more spaces. */
function indentsOf(line: string, width: number): { leading: number; hanging: number } {
  const leading = /^\s*/.exec(line)![0].length;
  let hanging = leading;
  for (const gap of line.matchAll(/\S( {2,})(?=\S)/g)) {
    const at = gap.index + 1 + gap[1].length;
    if (at <= width * MAX_HANGING_INDENT_SHARE) hanging = at;
  }
  return { leading, hanging };
}

/** The line broken at spaces into lines of at most `width`, each continuation indented by `indent`. */
function breakLine(line: string, indent: number, width: number): string[] {
  const lines: string[] = [];
  let current = line.slice(0, indent);
  let empty = true;
  for (const m of line.slice(indent).matchAll(WORD)) {
    const word = m[0];
    if (!empty && current.length + 1 + word.length > width) {
      lines.push(current);
      current = ' '.repeat(indent) + word;
    } else current += (empty ? '' : ' ') + word;
    empty = false;
  }
  return [...lines, current];
}

/**
 * Wraps the lines of a help text longer than `width` at spaces. A continuation lines up under the column the line's
 * text starts in: after its last gap of two or more spaces (a field list's description), else its own indent.
 * Gaps before that column (a field list's columns) are kept as written; examples and words longer than the width stay
 * whole. A paragraph wrapped by hand at a wider width reads on as one: what a line leaves over starts its next line
 * when that line goes on with the same prose.
 */
export function fitHelpText(text: string, width: number): string {
  const src = text.split('\n');
  const out: string[] = [];
  for (let i = 0; i < src.length; i++) {
    const line = src[i];
    if (line.length <= width || EXAMPLE.test(line)) {
      out.push(line);
      continue;
    }
    const { leading, hanging } = indentsOf(line, width);
    const pieces = breakLine(line, hanging, width);
    const next = src[i + 1];
    // The next line goes on with the same prose: same indent, no columns, not an example, not a new `Label:` line.
    const prose = (l: string) => l.trim() !== '' && !EXAMPLE.test(l) && !LABEL.test(l) && indentsOf(l, width).hanging === leading && indentsOf(l, width).leading === leading;
    if (pieces.length > 1 && hanging === leading && next !== undefined && prose(next)) {
      out.push(...pieces.slice(0, -1));
      src[i + 1] = `${pieces.at(-1)!} ${next.trimStart()}`;
    } else out.push(...pieces);
  }
  return out.join('\n');
}

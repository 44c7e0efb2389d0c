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
/** A hanging indent deeper than this is not taken from the line (its words would have no room). */
const MAX_HANGING_INDENT_SHARE = 0.6;

/**
 * Wraps the lines of a help text longer than `width` at spaces. A continuation lines up under the column the line's
 * text starts in: after its last gap of two or more spaces (a field list's description), else its own indent.
 * Gaps before that column (a field list's columns) are kept as written; examples and words longer than the width stay
 * whole.
 */
export function fitHelpText(text: string, width: number): string {
  return text
    .split('\n')
    .map((line) => {
      if (line.length <= width || EXAMPLE.test(line)) return line;
      let indent = /^\s*/.exec(line)![0].length;
      for (const gap of line.matchAll(/\S( {2,})(?=\S)/g)) {
        const at = gap.index + 1 + gap[1].length;
        if (at <= width * MAX_HANGING_INDENT_SHARE) indent = at;
      }
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
      return [...lines, current].join('\n');
    })
    .join('\n');
}

// `--help` fits the terminal (issue 29 item 10): Commander padded the term column to the longest term of the list
// (70 characters), so on a 100-column terminal every description began at column 74 and wrapped word by word. The term
// column is capped (src/cli/help-layout.ts); a longer term gets a line of its own. Every help text of every command is
// checked at 100 columns (a terminal) and 80 (a pipe, Commander's width then), examples aside (a command is not wrapped).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Command } from 'commander';
import { buildProgram, runCli } from '../src/cli/program.js';
import { fitHelpText, MAX_TERM_COLUMN, termColumn } from '../src/cli/help-layout.js';

/** Runs `gpuplane ARGS --help` with standard output a terminal of `columns` (or a pipe when undefined). */
async function help(args: string[], columns?: number): Promise<string> {
  let out = '';
  const stdout = { write: (s: string) => (out += s), isTTY: columns !== undefined, columns };
  const code = await runCli([...args, '--help'], { stdout, stderr: { write: () => true }, stdin: process.stdin, env: {} });
  assert.equal(code, 0);
  return out;
}

/** Every command's words (`['create', 'instance']`), the root first. */
function commandPaths(cmd: Command, prefix: string[] = []): string[][] {
  return [prefix, ...cmd.commands.flatMap((c) => commandPaths(c, [...prefix, c.name()]))];
}

/** Where the descriptions of a help's item lists begin (the column after the term and its gap). */
function descriptionColumns(text: string): number[] {
  return text.split('\n').flatMap((l) => {
    const m = /^( {2}\S.*?\S? {2,})\S/.exec(l);
    return m && !l.startsWith('  gpuplane ') ? [m[1].length] : [];
  });
}

describe('help layout', () => {
  test('the term column is the longest term, capped, and narrower on a narrow terminal', () => {
    assert.equal(termColumn(12, 100), 12);
    assert.equal(termColumn(70, 100), MAX_TERM_COLUMN);
    assert.equal(termColumn(70, 60), 60 - 4 - 40);
  });

  test('hand-written help text: paragraphs reflowed, a list\'s description under its column, hints and examples whole', () => {
    const text = [
      'A paragraph wrapped by hand for a wide screen goes on here, with a `gpuplane tfa authorize` hint in it, and',
      'goes on in this line.',
      'Units: a new statement stays on its own line.',
      '  gpu_name       string     GPU model; write spaces as _ (RTX_4090), as the client does',
      '  gpuplane create instance 1234 --image pytorch/pytorch --disk 40 --ssh --direct --wait --timeout 300',
    ].join('\n');
    assert.equal(fitHelpText(text, 60), [
      'A paragraph wrapped by hand for a wide screen goes on here,',
      'with a `gpuplane tfa authorize` hint in it, and goes on in',
      'this line.',
      'Units: a new statement stays on its own line.',
      '  gpu_name       string     GPU model; write spaces as _',
      '                            (RTX_4090), as the client does',
      '  gpuplane create instance 1234 --image pytorch/pytorch --disk 40 --ssh --direct --wait --timeout 300',
    ].join('\n'));
  });

  test('the top-level help at 100 columns: no line past 100, descriptions beside a capped column', async () => {
    const text = await help([], 100);
    for (const line of text.split('\n')) assert.ok(line.length <= 100, `${line.length}: ${line}`);
    const cols = descriptionColumns(text);
    assert.ok(cols.length > 20, 'the item lists were found');
    assert.ok(Math.max(...cols) <= 2 + MAX_TERM_COLUMN + 2, `descriptions start at ${Math.max(...cols)}`);
    // The longest command stands on its own line, its description below it, aligned with the others.
    const lines = text.split('\n');
    const at = lines.findIndex((l) => l.startsWith('  remove-machine-from-cluster <cluster_id>'));
    assert.ok(at > 0, text);
    assert.match(lines[at + 1], new RegExp(`^ {${2 + MAX_TERM_COLUMN + 2}}remove a machine from a cluster`));
  });

  test('every command\'s help fits 80 columns in a pipe and 100 on a terminal (examples aside)', async () => {
    for (const path of commandPaths(buildProgram())) {
      if (path[0] === 'serve' || path[0] === 'admin') continue; // dispatched before Commander, with their own help
      for (const width of [undefined, 100]) {
        const text = await help(path, width);
        for (const line of text.split('\n')) {
          if (/^ {2,}gpuplane /.test(line)) continue;
          assert.ok(line.length <= (width ?? 80), `gpuplane ${path.join(' ')} --help at ${width ?? 'a pipe'}: ${line.length}: ${line}`);
        }
      }
    }
  });
});

/** A JSON document named on the command line: a file, or standard input for `-` (`emu seed`, `emu restore`). */
import { readFile } from 'node:fs/promises';
import { UsageError } from './context.js';

async function readStream(stream: AsyncIterable<unknown>): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += String(chunk);
  return text;
}

/** The parsed document; a file that cannot be read or is not JSON is a usage error naming it (and `notJson`'s hint). */
export async function readJsonArg(file: string, stdin: AsyncIterable<unknown>, notJson = ''): Promise<unknown> {
  let text: string;
  try {
    text = file === '-' ? await readStream(stdin) : await readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${file} is not JSON: ${notJson || (err as Error).message}`);
  }
}

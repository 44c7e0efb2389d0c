// A node:test reporter that writes only the failed tests, each with its file, line and error. run-tests.mjs runs it
// beside the TAP reporter and prints what it wrote at the very end of the output, so a failure deep in a long run is
// still in the last lines (where a CI log shown in part, from its end, has it).
import { inspect } from 'node:util';

export default async function* failures(source) {
  for await (const event of source) {
    if (event.type !== 'test:fail') continue;
    const { name, file, line, details } = event.data;
    // A suite that failed only because a test in it failed adds nothing: that test is reported itself.
    if (details?.error?.failureType === 'subtestsFailed') continue;
    const where = file ? ` (${file}${line ? `:${line}` : ''})` : '';
    // The error's first lines: its message and where it was thrown, not the test runner's own frames.
    const error = inspect(details?.error?.cause ?? details?.error, { depth: 4 }).split('\n').filter((l) => !l.includes('node:internal/'));
    yield `not ok: ${name}${where}\n${error.slice(0, 30).join('\n')}\n\n`;
  }
}

// A node:test reporter that writes each test file's time: the sum of its top-level tests' and suites' durations (a
// file runs them one after another), slowest first, as `seconds  file`. run-tests.mjs prints the slowest at the end,
// so where a run's time goes is in its log, and a file grown slow is seen the day it does.
import { relative } from 'node:path';

export default async function* durations(source) {
  const byFile = new Map();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { file, nesting, details } = event.data;
    if (nesting !== 0 || !file) continue;
    byFile.set(file, (byFile.get(file) ?? 0) + (details?.duration_ms ?? 0));
  }
  const rows = [...byFile].sort((a, b) => b[1] - a[1]);
  for (const [file, ms] of rows) yield `${(ms / 1000).toFixed(1).padStart(7)}  ${relative(process.cwd(), file)}\n`;
}

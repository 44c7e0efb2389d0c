/**
 * `npm run bench` runs every `bench/<name>.bench.ts` in turn; `npm run bench -- users startup` runs those named.
 * Options: `--duration S` (seconds of load per measurement, default 3), `--connections N` (default 32; wrk -t1),
 * `--rounds N` (alternating baseline/gpuplane rounds, default 3). Each module default-exports `defineBench({...})`
 * from ./lib.ts and returns its figures; this prints them, with the target each is judged against.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { makeTmpDir, ROOT, type Bench, type Figure } from './lib.js';

const SUFFIX = '.bench.ts';

const { values, positionals } = parseArgs({
  args: process.argv.slice(2),
  options: {
    duration: { type: 'string', default: '3' },
    connections: { type: 'string', default: '32' },
    rounds: { type: 'string', default: '3' },
  },
  allowPositionals: true,
});

const positive = (name: string, v: string | undefined): number => {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) {
    process.stderr.write(`bench: --${name} must be a positive number, got ${JSON.stringify(v)}\n`);
    process.exit(2);
  }
  return n;
};

const available = readdirSync(join(ROOT, 'bench'))
  .filter((f) => f.endsWith(SUFFIX))
  .map((f) => f.slice(0, -SUFFIX.length))
  .sort();
const unknown = positionals.filter((p) => !available.includes(p));
if (unknown.length) {
  process.stderr.write(`bench: no benchmark named ${unknown.join(', ')} (available: ${available.join(', ')})\n`);
  process.exit(2);
}
const selected = positionals.length ? positionals : available;

function verdict(f: Figure): string {
  if (!f.target) return '';
  const ok = f.target.op === '>=' ? f.value >= f.target.value : f.value <= f.target.value;
  return `  (target ${f.target.op} ${f.target.value}: ${ok ? 'met' : 'MISSED'})`;
}

const tmp = makeTmpDir();
let missed = 0;
try {
  for (const name of selected) {
    const bench = (await import(join(ROOT, 'bench', `${name}${SUFFIX}`))).default as Bench;
    process.stdout.write(`\n== ${bench.name}: ${bench.description}\n`);
    const figures = await bench.run({
      durationS: positive('duration', values.duration),
      connections: Math.round(positive('connections', values.connections)),
      rounds: Math.round(positive('rounds', values.rounds)),
      tmpDir: tmp.dir,
      log: (line) => process.stdout.write(`${line}\n`),
    });
    const width = Math.max(...figures.map((f) => f.name.length));
    for (const f of figures) {
      process.stdout.write(`  ${f.name.padEnd(width)}  ${String(f.value).padStart(9)} ${f.unit}${verdict(f)}\n`);
      if (verdict(f).includes('MISSED')) missed++;
    }
  }
} finally {
  tmp.remove();
}
process.stdout.write(missed ? `\n${missed} figure(s) missed their target.\n` : '\nEvery figure met its target.\n');

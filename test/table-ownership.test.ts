// SQL only on your own tables (docs/DEVELOPING.md, "Layers and their rules"): each table belongs to the feature whose
// `*-tables.ts` declares it (the platform's `kv` and `jobs` to src/platform/), and no other feature's code names it in
// a Kysely query (selectFrom, insertInto, updateTable, deleteFrom, a join) or in raw SQL (FROM, JOIN, UPDATE, INTO
// inside a sql`` template). Another feature's rows are read and written through that feature's contract or service.
// dependency-cruiser checks the imports; this checks the SQL, which imports do not show.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

const ROOT = join(import.meta.dirname, '..');
const SRC = join(ROOT, 'src');

/**
 * The SQL on another feature's table that remains, each with its reason: a file, the table it names, and why. Keep it
 * short; an entry that no longer matches anything fails the test, so the list cannot go stale.
 */
const EXCEPTIONS: { file: string; table: string; why: string }[] = [
  // The key lookup runs on every authenticated request: the key, its user and the user's running rate in one
  // statement (docs/PERFORMANCE.md), where three reads through three features would triple its round trips.
  { file: 'src/keys/keys-store.ts', table: 'users', why: 'the key lookup reads the key and its user in one statement' },
  // A member list shows each member's e-mail and name beside their role: one join, not one users read per member.
  { file: 'src/teams/teams-store.ts', table: 'users', why: 'the member list joins the members\' e-mail and name' },
  // The fingerprint of what an agent must run includes the SSH keys of its instances' owners.
  { file: 'src/instances/instances-agent-store.ts', table: 'ssh_keys', why: 'the agent fingerprint reads the account SSH keys' },
  // users.credit_micro is the balance billing settles: the ledger reads it with the running totals in one statement,
  // and a settle pass debits every due user in one UPDATE … FROM (docs/PERFORMANCE.md); a transfer locks both users.
  { file: 'src/billing/billing-store.ts', table: 'users', why: 'the ledger reads and settles users.credit_micro in bulk' },
  { file: 'src/billing/billing-payments-store.ts', table: 'users', why: 'a transfer locks both users\' rows in id order' },
  // A simulated machine is one without an agent row: the simulated hosts' due-work insert checks it in the statement.
  { file: 'src/emulator/simulated-hosts/simhost-store.ts', table: 'agent_machines', why: 'a machine without an agent row is a simulated one' },
];

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : name.endsWith('.ts') ? [p] : [];
  });
}

/** The feature a file of src/ belongs to: its first folder (src/emulator/simulated-hosts/ is the emulator's). */
const featureOf = (rel: string) => rel.split('/')[1];

/** Table name → the feature whose `*-tables.ts` declares it (in an `interface …Tables { name: Row; … }`). */
function tableOwners(files: { rel: string; text: string }[]): Map<string, string> {
  const owners = new Map<string, string>();
  for (const { rel, text } of files) {
    if (rel === 'src/database.ts') continue; // the root's Database extends every feature's list
    for (const m of text.matchAll(/export interface \w*Tables\s*\{([^}]*)\}/g)) {
      for (const t of m[1].matchAll(/^\s*([a-z_][a-z0-9_]*)\s*:/gm)) {
        assert.ok(!owners.has(t[1]), `table ${t[1]} is declared twice (${owners.get(t[1])} and ${rel})`);
        owners.set(t[1], featureOf(rel));
      }
    }
  }
  return owners;
}

/** The text of each sql`…` template in `text` (its `${…}` parts as `?`), with the offset where it starts. */
function sqlTemplates(text: string): { at: number; literal: string }[] {
  const out: { at: number; literal: string }[] = [];
  // sql`…`, sql<T>`…` (a type argument may hold one level of <…>).
  for (const m of text.matchAll(/\bsql(?:<(?:[^<>`]|<[^<>`]*>)*>)?`/g)) {
    let i = m.index + m[0].length;
    let literal = '';
    while (i < text.length && text[i] !== '`') {
      if (text[i] === '\\') {
        literal += text.slice(i, i + 2);
        i += 2;
      } else if (text.startsWith('${', i)) {
        // Skip the expression to its closing brace; a template nested in it is found by the outer loop on its own.
        let depth = 1;
        i += 2;
        while (i < text.length && depth > 0) {
          if (text[i] === '`') i = skipTemplate(text, i + 1);
          else if (text[i] === '{') depth++;
          else if (text[i] === '}') depth--;
          i++;
        }
        literal += ' ? ';
      } else literal += text[i++];
    }
    out.push({ at: m.index, literal });
  }
  return out;
}

/** The index of the backtick that closes the template whose text starts at `i`. */
function skipTemplate(text: string, i: number): number {
  while (i < text.length && text[i] !== '`') {
    if (text[i] === '\\') i++;
    else if (text.startsWith('${', i)) {
      let depth = 1;
      i += 2;
      while (i < text.length && depth > 0) {
        if (text[i] === '`') i = skipTemplate(text, i + 1);
        else if (text[i] === '{') depth++;
        else if (text[i] === '}') depth--;
        i++;
      }
      continue;
    }
    i++;
  }
  return i;
}

/** Every table name `text` puts in a query, with the line it is on. */
function tablesNamed(text: string): { table: string; line: number; how: string }[] {
  const lineOf = (at: number) => text.slice(0, at).split('\n').length;
  const found: { table: string; line: number; how: string }[] = [];
  const kysely = /\.(selectFrom|insertInto|updateTable|deleteFrom|innerJoin|leftJoin|rightJoin|fullJoin)\(\s*['"`]([a-z_][a-z0-9_]*)|\bsql\.table\(\s*['"`]([a-z_][a-z0-9_]*)/g;
  for (const m of text.matchAll(kysely)) found.push({ table: m[2] ?? m[3], line: lineOf(m.index), how: m[1] ?? 'sql.table' });
  for (const t of sqlTemplates(text)) {
    for (const m of t.literal.matchAll(/\b(FROM|JOIN|UPDATE|INTO)\s+"?([A-Za-z_][A-Za-z0-9_]*)/gi)) {
      found.push({ table: m[2], line: lineOf(t.at) + t.literal.slice(0, m.index).split('\n').length - 1, how: `sql ${m[1].toUpperCase()}` });
    }
  }
  return found;
}

test('the scan finds a table named in each form of query', () => {
  const text = [
    "db.selectFrom('a as x').innerJoin('b as y', 'y.id', 'x.id')",
    "tx.insertInto('c').values(v); tx.updateTable(\n  'd'\n).set(s); tx.deleteFrom(\"e\"); q.leftJoin('f', 'f.id', 'x.f')",
    'await sql<{ n: number }>`SELECT n FROM g JOIN "h" ON ${sql`1 FROM i`} UPDATE j INSERT INTO k`.execute(tx)',
    '// a comment that reads from l, and a string: "from m" are no query',
  ].join('\n');
  assert.deepEqual(
    tablesNamed(text).map((t) => `${t.table}:${t.line}`).sort(),
    ['a:1', 'b:1', 'c:2', 'd:2', 'e:4', 'f:4', 'g:5', 'h:5', 'i:5', 'j:5', 'k:5'],
  );
});

test('SQL names only its own feature\'s tables, but for the listed exceptions', () => {
  const files = filesUnder(SRC).map((p) => ({ rel: relative(ROOT, p).split(sep).join('/'), text: readFileSync(p, 'utf8') }));
  const owners = tableOwners(files);
  assert.ok(owners.get('instances') === 'instances' && owners.get('kv') === 'platform' && owners.get('users') === 'users', 'the table map is read');
  const violations: string[] = [];
  const used = new Set<(typeof EXCEPTIONS)[number]>();
  for (const { rel, text } of files) {
    // Migrations create every owner's tables (src/migrations/, one owner each); the root files, the CLI, the SDK
    // and the agent run no SQL of a feature.
    if (!/^src\/[^/]+\//.test(rel) || /^src\/(migrations|cli|sdk|agent)\//.test(rel)) continue;
    for (const { table, line, how } of tablesNamed(text)) {
      const owner = owners.get(table);
      if (owner === undefined || owner === featureOf(rel)) continue;
      const exception = EXCEPTIONS.find((e) => e.file === rel && e.table === table);
      if (exception) used.add(exception);
      else violations.push(`${rel}:${line} ${how} ${table}, a table of ${owner}`);
    }
  }
  assert.deepEqual(violations, [], 'SQL on another feature\'s table: go through that feature\'s contract or service');
  assert.deepEqual(EXCEPTIONS.filter((e) => !used.has(e)), [], 'an exception no longer needed: remove it');
});

/**
 * Files outside a store that still run SQL, each with its reason (stores hold the SQL: `*-store.ts`; the platform's
 * db kit and the migrations aside). An entry no longer needed fails the test, so the list cannot go stale.
 */
const SQL_OUTSIDE_STORES: { file: string; why: string }[] = [
  { file: 'src/agent-server/agent-server-changes.ts', why: 'asks PostgreSQL for its current schema, to listen on that schema\'s channel' },
  { file: 'src/billing/billing-contract.ts', why: 'a fragment (the running rate) billing gives the key lookup\'s one statement' },
  { file: 'src/emulator/emulator-service.ts', why: 'POST /_emu/reset empties every table it finds in the schema' },
  { file: 'src/instances/instances-batch.ts', why: 'savepoints around each unit of a batch: transaction control, no table' },
];

test('SQL lives in stores, but for the listed exceptions', () => {
  const query = /\.(selectFrom|updateTable|insertInto|deleteFrom|selectNoFrom)\(|\bsql(<[^>]*>)?`|\bsql\.(raw|table|ref|lit|id|join|val)\(/;
  const outside = filesUnder(SRC)
    .map((p) => relative(ROOT, p).split(sep).join('/'))
    .filter((rel) => /^src\/[^/]+\//.test(rel) && !/^src\/(migrations|platform|cli|sdk|agent)\//.test(rel) && !/store\.ts$/.test(rel))
    .filter((rel) => query.test(readFileSync(join(ROOT, rel), 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '')));
  const listed = SQL_OUTSIDE_STORES.map((e) => e.file);
  assert.deepEqual(outside.filter((f) => !listed.includes(f)), [], 'SQL outside a store: move it into the feature\'s *-store.ts');
  assert.deepEqual(listed.filter((f) => !outside.includes(f)), [], 'an exception no longer needed: remove it');
});

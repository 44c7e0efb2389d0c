/**
 * Issue 34 (state): the whole emulated world saved to one JSON document and loaded back, exactly: the same ids, the
 * same keys, the same answers, and the next id made after a load is the one the saved world would have made.
 *
 * What a document holds: every row of every table of the database (the migrator's bookkeeping aside), generically,
 * so tables added later come along; the autoincrement counters; the clock. What it does not: the secret key that
 * seals secrets at rest (each server keeps its own; sealed values travel opened, see emu-state-codec.ts).
 *
 * A load replaces the world in one transaction: every table emptied (as `/_emu/reset`), the rows inserted (parents
 * before children on PostgreSQL), the counters set, then the clock put where the document says. What processes keep
 * in memory follows from the database: the offer index reloads on a new fleet epoch (given here), the key lookups and
 * the clock re-read on SQLite's data version, the scheduler's jobs are rows.
 */
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { isVirtual, type Clock } from '../../platform/clock.js';
import type { Store, Tx } from '../../platform/db/connect.js';
import { kvState } from '../../platform/db/kv.js';
import { ApiError } from '../../platform/errors.js';
import type { Random } from '../../platform/random.js';
import type { Scheduler } from '../../platform/scheduler.js';
import { SECRET_KEY_KV } from '../../platform/secret-key.js';
import { decodeValue, encodeValue, type Sealer } from './emu-state-codec.js';
import { emuStateStore, type TableInfo } from './emu-state-store.js';
import { STATE_FORMAT, STATE_VERSION, type StateDocument, type StateLoaded } from './emu-state-schemas.js';

export interface EmuStateDeps {
  store: Store;
  clock: Clock;
  scheduler: Scheduler;
  random: Random;
  secretBox: Sealer;
  log?: Logger;
}

/**
 * Columns whose value is only a token telling processes to drop a cache, not part of the world: a load gives each a
 * fresh value, so every process's offer index (machines-index.ts) reloads the restored fleet in full even when the
 * saved epoch is the one it holds (a world saved and loaded again by the same process).
 */
const CACHE_TOKENS: Record<string, string[]> = { fleet_state: ['epoch'] };

/** Never saved, and kept through a load: this database's own key for secrets at rest (platform/secret-key.ts). */
const KEPT_KV = new Set([SECRET_KEY_KV]);

type Row = Record<string, unknown>;
/** Runs after a load (`onLoaded`). */
export type LoadedHook = () => Promise<void> | void;

function compareValues(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === null || a === undefined) return -1;
  if (b === null || b === undefined) return 1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const x = String(a);
  const y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Rows in key order (every column when there is no key), the same on both databases: a document is stable. */
function sortRows(rows: Row[], table: TableInfo): Row[] {
  const by = table.key.length ? table.key : table.columns.map((c) => c.name);
  return rows.sort((r, s) => {
    for (const c of by) {
      const d = compareValues(r[c], s[c]);
      if (d !== 0) return d;
    }
    return 0;
  });
}

/** Parents before children (PostgreSQL checks each foreign key as the statement runs); then by name. */
function insertOrder(names: string[], refs: Array<{ child: string; parent: string }>): string[] {
  const parents = new Map(names.map((n) => [n, new Set<string>()]));
  for (const { child, parent } of refs) if (child !== parent && parents.has(child) && parents.has(parent)) parents.get(child)!.add(parent);
  const out: string[] = [];
  const done = new Set<string>();
  while (out.length < names.length) {
    const ready = names.filter((n) => !done.has(n) && [...parents.get(n)!].every((p) => done.has(p)));
    // A cycle (none today): the rest in name order, and the database says which row it refuses.
    const next = ready.length ? ready : names.filter((n) => !done.has(n));
    for (const n of next) {
      out.push(n);
      done.add(n);
    }
  }
  return out;
}

export function emuStateServiceFactory({ store, clock, scheduler, random, secretBox, log }: EmuStateDeps) {
  const sqlStore = emuStateStore(store.dialect);
  const kv = kvState(store.db);
  const loadedHooks: LoadedHook[] = [];

  /** The whole world as a document. */
  async function save(): Promise<StateDocument> {
    // One snapshot of every table (PostgreSQL: repeatable read; SQLite: the one connection's transaction).
    let tx = store.db.transaction();
    if (store.dialect === 'postgres') tx = tx.setIsolationLevel('repeatable read');
    return tx.execute(async (t) => {
      const tables = await sqlStore.tables(t);
      const rows: StateDocument['rows'] = {};
      for (const table of tables) {
        let got = await sqlStore.rows(t, table.name);
        if (table.name === 'kv') got = got.filter((r) => !KEPT_KV.has(String(r.key)));
        rows[table.name] = sortRows(got, table).map((r) =>
          Object.fromEntries(table.columns.map((c) => [c.name, encodeValue(r[c.name], secretBox)])),
        );
      }
      const now = clock.now();
      return {
        format: STATE_FORMAT,
        version: STATE_VERSION,
        saved_at: now,
        saved_from: store.dialect,
        clock: { kind: clock.kind, now },
        sequences: await sqlStore.sequences(t),
        rows,
      };
    });
  }

  /** Checks a document and turns its rows into each table's columns and values (nothing is written). */
  function prepare(doc: StateDocument, tables: TableInfo[]): Array<{ table: TableInfo; columns: string[]; values: unknown[][] }> {
    if (doc.format !== STATE_FORMAT) {
      throw new ApiError('bad_request', `body.format: ${JSON.stringify(doc.format)} is not a saved emulator state (expected "${STATE_FORMAT}")`);
    }
    if (doc.version !== STATE_VERSION) {
      throw new ApiError('bad_request', `body.version: ${doc.version} is not a version this emulator reads (it reads ${STATE_VERSION})`);
    }
    const byName = new Map(tables.map((t) => [t.name, t]));
    const out: Array<{ table: TableInfo; columns: string[]; values: unknown[][] }> = [];
    for (const [name, docRows] of Object.entries(doc.rows)) {
      const table = byName.get(name);
      if (!table) throw new ApiError('bad_request', `body.rows.${name}: this database has no table of that name (saved by another version?)`);
      const cols = new Map(table.columns.map((c) => [c.name, c]));
      // The columns the document's rows name (their union), in the table's order.
      const named = new Set<string>();
      docRows.forEach((r, i) => {
        for (const k of Object.keys(r)) {
          if (!cols.has(k)) throw new ApiError('bad_request', `body.rows.${name}[${i}].${k}: the table has no such column`);
          named.add(k);
        }
      });
      const columns = table.columns.filter((c) => named.has(c.name));
      const tokens = CACHE_TOKENS[name] ?? [];
      const values = docRows
        .filter((r) => !(name === 'kv' && KEPT_KV.has(String(r.key))))
        .map((r, i) =>
          columns.map((c) => {
            const at = `body.rows.${name}[${i}].${c.name}`;
            if (!(c.name in r)) {
              if (c.notNull && !c.hasDefault) throw new ApiError('bad_request', `${at}: missing (the column takes no null)`);
              return null;
            }
            if (tokens.includes(c.name)) return random.bytes(8).toString('hex');
            return decodeValue(r[c.name], c, secretBox, at);
          }),
        );
      for (const c of table.columns) {
        if (c.notNull && !c.hasDefault && !named.has(c.name) && values.length) {
          throw new ApiError('bad_request', `body.rows.${name}[0].${c.name}: missing (the column takes no null)`);
        }
      }
      out.push({ table, columns: columns.map((c) => c.name), values });
    }
    return out;
  }

  /** Highest `id` of each table whose key is an integer `id` (the autoincrement key), among the rows loaded. */
  function maxIds(prepared: ReturnType<typeof prepare>): Record<string, number> {
    const out: Record<string, number> = {};
    for (const p of prepared) {
      const i = p.columns.indexOf('id');
      if (i < 0 || p.table.key.join() !== 'id') continue;
      out[p.table.name] = p.values.reduce<number>((m, r) => (typeof r[i] === 'number' ? Math.max(m, r[i] as number) : m), 0);
    }
    return out;
  }

  /**
   * Replaces the world with the document's, in one transaction; then the clock. `callerKeyHash`: the digest of the
   * key the request came with, which must be a live key of the saved world (else the caller would lock themselves out).
   */
  async function load(doc: StateDocument, opts: { callerKeyHash?: string } = {}): Promise<StateLoaded> {
    const tables = await sqlStore.tables(store.db);
    const prepared = prepare(doc, tables);
    if (opts.callerKeyHash !== undefined) {
      const keys = (doc.rows.api_keys ?? []) as Row[];
      if (!keys.some((k) => k.key_hash === opts.callerKeyHash && (k.revoked_at ?? null) === null)) {
        throw new ApiError(
          'conflict',
          'the saved world has no live key equal to the one this request came with, so that key would stop working once it is loaded: '
            + 'load it with a key of the saved world (start the emulators with the same GPUPLANE_BOOTSTRAP_API_KEY)',
        );
      }
    }
    const order = insertOrder(
      prepared.map((p) => p.table.name),
      await sqlStore.references(store.db),
    );
    const byName = new Map(prepared.map((p) => [p.table.name, p]));
    let rows = 0;
    await store.db.transaction().execute(async (tx: Tx) => {
      const secretKey = await kv.get(tx, SECRET_KEY_KV);
      await sqlStore.empty(tx, tables.map((t) => t.name));
      for (const name of order) {
        const p = byName.get(name)!;
        try {
          await sqlStore.insert(tx, name, p.columns, p.values);
        } catch (err) {
          if (err instanceof ApiError) throw err;
          // A row the schema refuses (a duplicate key, a missing parent): the document's fault, said as such.
          throw new ApiError('bad_request', `body.rows.${name}: the database refused these rows (${(err as Error).message})`);
        }
        rows += p.values.length;
      }
      if (secretKey !== undefined) await kv.claim(tx, SECRET_KEY_KV, secretKey);
      await sqlStore.setSequences(tx, doc.sequences ?? {}, maxIds(prepared));
    });
    if (isVirtual(clock) && typeof doc.clock?.now === 'number') {
      // The clock stands where the saved world's stood, earlier or later than this server's.
      clock.restore(doc.clock.now);
      await scheduler.saveVirtualNow();
    }
    for (const hook of loadedHooks) await hook();
    log?.info({ tables: prepared.length, rows, saved_from: doc.saved_from, clock: clock.now() }, 'emulator state loaded');
    return { success: true, tables: prepared.length, rows, clock: { kind: clock.kind, now: clock.now() } };
  }

  return {
    save,
    load,
    /**
     * A part that keeps something of the world in memory beyond what the database tells it (e.g. agents started for
     * machines) hears of each load here, once the new world has committed and the clock is set.
     */
    onLoaded(hook: LoadedHook): void {
      loadedHooks.push(hook);
    },
    /** Loads the document in `file` (GPUPLANE_EMU_STATE at start); a refusal names the file. */
    async loadFile(file: string): Promise<StateLoaded> {
      let doc: StateDocument;
      try {
        doc = JSON.parse(await readFile(file, 'utf8')) as StateDocument;
      } catch (err) {
        throw new Error(`GPUPLANE_EMU_STATE ${file}: not a readable JSON file (${(err as Error).message})`);
      }
      if (!doc || typeof doc !== 'object' || !doc.rows || typeof doc.rows !== 'object') {
        throw new Error(`GPUPLANE_EMU_STATE ${file}: not a saved emulator state (no "rows"; save one with gpuplane emu save FILE)`);
      }
      try {
        return await load(doc);
      } catch (err) {
        throw new Error(`GPUPLANE_EMU_STATE ${file}: ${(err as Error).message}`);
      }
    },
  };
}

export type EmuStateService = ReturnType<typeof emuStateServiceFactory>;

/**
 * Statements of the hot paths (renting, booting, billing a meter), built and compiled once and then run with new
 * values. Building a query with Kysely and compiling it to SQL costs more than SQLite takes to run a simple indexed
 * statement: renting one instance runs about twenty of them, and their building was a quarter of the server's time.
 *
 * `build` receives stand-ins for the named values and must give a statement whose shape does not depend on them (no
 * arrays, no optional parts): every stand-in becomes one bound parameter. `preparedByKeys` keeps one statement per set
 * of keys, for inserts and updates whose columns vary by caller. `preparedForOne` and `preparedRows` write a statement
 * over a list once: compiled once for a list of one (the hot paths' case), built each time for longer lists.
 */
import type { Compilable, CompiledQuery, QueryResult } from 'kysely';
import type { Tx } from './connect.js';

/** Stands for the named value while the statement is built. */
class Slot {
  constructor(readonly name: string) {}
}

interface Compiled<R> {
  query: CompiledQuery<R>;
  /** For each bound parameter, the name of the value it takes, or undefined for a constant of the statement. */
  names: (string | undefined)[];
}

function compile<P extends object, R>(build: (p: P) => Compilable<R>, keys: string[]): Compiled<R> {
  const slots = Object.fromEntries(keys.map((k) => [k, new Slot(k)])) as P;
  const query = build(slots).compile();
  return { query, names: query.parameters.map((v) => (v instanceof Slot ? v.name : undefined)) };
}

function run<P extends object, R>(tx: Tx, c: Compiled<R>, params: P): Promise<QueryResult<R>> {
  const values = params as Record<string, unknown>;
  const parameters = c.query.parameters.map((v, i) => {
    const name = c.names[i];
    return name === undefined ? v : values[name];
  });
  return tx.executeQuery<R>({ ...c.query, parameters });
}

/** A statement of fixed shape; `keys` names its values. */
export function prepared<P extends object, R>(keys: (keyof P & string)[], build: (p: P) => Compilable<R>) {
  let c: Compiled<R> | undefined;
  return (tx: Tx, params: P): Promise<QueryResult<R>> => run(tx, (c ??= compile(build, keys)), params);
}

/** One statement per set of defined keys of `params` (an undefined value is left out, as Kysely leaves it out). */
export function preparedByKeys<P extends object, R>(build: (p: P) => Compilable<R>) {
  const byShape = new Map<string, Compiled<R>>();
  return (tx: Tx, params: P): Promise<QueryResult<R>> => {
    const keys = Object.keys(params).filter((k) => (params as Record<string, unknown>)[k] !== undefined);
    const shape = keys.join(',');
    let c = byShape.get(shape);
    if (!c) byShape.set(shape, (c = compile(build, keys)));
    return run(tx, c, params);
  };
}

/**
 * A statement over a list of ids (`id IN (…)`), written once by `build`: for one id (a rent's machine, a destroy's
 * instance) it is compiled once, as `prepared`, with that id as its parameter `$id` (`IN (?)`, which both databases
 * plan as `= ?`); for more ids it is built each time, as the list's length is part of its shape. `keys` name the
 * other values in `params`, which must not change the statement's shape either.
 */
export function preparedForOne<R, P extends object = Record<never, never>>(
  db: Tx,
  keys: (keyof P & string)[],
  build: (tx: Tx, ids: readonly number[], params: P) => Compilable<R>,
) {
  const one = prepared<P & { $id: number }, R>(['$id', ...keys] as (keyof (P & { $id: number }) & string)[], (p) => build(db, [p.$id], p));
  /** `ids` must not be empty (`IN ()` is no statement): the callers return first. */
  return (tx: Tx, ids: readonly number[], params = {} as P): Promise<QueryResult<R>> =>
    ids.length === 1 ? one(tx, { ...params, $id: ids[0] }) : tx.executeQuery(build(tx, ids, params));
}

/**
 * An insert of rows (`VALUES (…), (…)`), written once by `build`: one row is compiled once per set of defined keys,
 * as `preparedByKeys`; more rows are built each time. Nothing runs for no rows.
 */
export function preparedRows<T extends object, R>(db: Tx, build: (tx: Tx, rows: readonly T[]) => Compilable<R>) {
  const one = preparedByKeys<T, R>((row) => build(db, [row]));
  return async (tx: Tx, rows: readonly T[]): Promise<void> => {
    if (rows.length === 1) await one(tx, rows[0]);
    else if (rows.length > 1) await tx.executeQuery(build(tx, rows));
  };
}

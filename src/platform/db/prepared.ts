/**
 * Statements of the hot paths (renting, booting, billing a meter), built and compiled once and then run with new
 * values. Building a query with Kysely and compiling it to SQL costs more than SQLite takes to run a simple indexed
 * statement: renting one instance runs about twenty of them, and their building was a quarter of the server's time.
 *
 * `build` receives stand-ins for the named values and must give a statement whose shape does not depend on them (no
 * arrays, no optional parts): every stand-in becomes one bound parameter. `preparedByKeys` keeps one statement per set
 * of keys, for inserts and updates whose columns vary by caller.
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

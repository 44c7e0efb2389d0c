import pg from 'pg';

/**
 * Server-side prepared statements on PostgreSQL, for every statement with parameters.
 *
 * Kysely sends each query as an unnamed statement, so PostgreSQL parses, analyses and plans its text on every run.
 * Under the mixed load (bench `pg-mixed`) that was a good part of the database's CPU: its backends took more CPU per
 * request than the three server processes. Here a statement is named after its text (one name per distinct text in
 * this process), and pg sends the text only the first time a connection runs it; the backend keeps the parsed
 * statement, and its plan once a generic plan proves as good as the custom ones (PostgreSQL's `plan_cache_mode`).
 *
 * - Only statements with parameters: pg sends one without parameters by the simple protocol, which allows several
 *   statements in one text (migrations) and cannot be named.
 * - At most `MAX_NAMED` texts get a name; the rest run unnamed. Statements whose text follows their row count (an
 *   `in ($1, $2, …)` list, a multi-row insert) each take a name, and each connection keeps what it prepared.
 * - Named only once `enable()` is called, after the migrations: a statement prepared before a migration changes its
 *   table's columns would fail afterwards.
 * - A table changed under a prepared statement by another process (a newer version migrating the database while
 *   this one runs) fails that statement once with "cached plan must not change result type"; its text then takes a
 *   new name, so the next run prepares it again.
 */
export const MAX_NAMED = 2000;

/** What a prepared statement fails with once its table's columns changed: its text is prepared again under a new name. */
const PLAN_CHANGED = '0A000';

type Query = (...args: unknown[]) => unknown;

/** What pg's Query takes from a config object, set on one built from a text (pg reads them when it is submitted). */
interface NamedQuery {
  name: string;
  callback: (err: Error | null, result?: unknown) => void;
}

export function nameStatements(pool: pg.Pool, max = MAX_NAMED): { enable(): void; count(): number } {
  let enabled = false;
  let next = 0;
  const names = new Map<string, string>();

  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (name === undefined && names.size < max) names.set(text, (name = `gp${next++}`));
    return name;
  };

  pool.on('connect', (client) => {
    const query = client.query.bind(client) as Query;
    // Kysely calls `query(text, values)` and awaits the promise; every other form passes through unchanged.
    (client as unknown as { query: Query }).query = (text: unknown, values?: unknown, callback?: unknown) => {
      if (!enabled || typeof text !== 'string' || !Array.isArray(values) || values.length === 0 || callback !== undefined) {
        return query(text, values, callback);
      }
      const name = nameOf(text);
      if (name === undefined) return query(text, values);
      return new Promise((resolve, reject) => {
        // Built from the text and named after: pg copies a config object given to it property by property
        // (`cloneQueryConfig`, 2.3% of a server's CPU under the mixed load), but not a text.
        const q = new pg.Query(text, values) as pg.Query & NamedQuery;
        q.name = name;
        q.callback = (err, result) => {
          if (!err) return resolve(result);
          if ((err as { code?: unknown }).code === PLAN_CHANGED && names.get(text) === name) names.delete(text);
          reject(err);
        };
        query(q);
      });
    };
  });

  return {
    enable: () => void (enabled = true),
    count: () => names.size,
  };
}

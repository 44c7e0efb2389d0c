import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { Tx } from '../platform/db/connect.js';
import type { Scope } from '../platform/auth.js';
import type { TemplatesTable } from './templates-tables.js';

export type TemplateRow = Selectable<TemplatesTable>;
export type TemplateInsert = Insertable<TemplatesTable>;
export type TemplatePatch = Updateable<TemplatesTable>;

/** One compiled search condition over a real column (the service maps and coerces the spec's field names). */
export interface ColumnFilter {
  column: keyof TemplatesTable & string;
  op: 'eq' | 'neq' | 'lt' | 'lte' | 'gt' | 'gte' | 'in' | 'notin';
  value: string | number | null | Array<string | number>;
}

const SQL_OP = { eq: '=', neq: '<>', lt: '<', lte: '<=', gt: '>', gte: '>=' } as const;

export function templatesStore(db: Tx) {
  /** Rows the scope owns: its team's in a team context, otherwise the user's personal ones. */
  const owned = (scope: Scope) => (eb: any) =>
    scope.teamId !== null
      ? eb('team_id', '=', scope.teamId)
      : eb.and([eb('user_id', '=', scope.userId), eb('team_id', 'is', null)]);

  return {
    async insert(row: TemplateInsert, tx: Tx = db): Promise<TemplateRow> {
      return tx.insertInto('templates').values(row).returningAll().executeTakeFirstOrThrow();
    },

    async update(id: number, patch: TemplatePatch, tx: Tx = db): Promise<TemplateRow> {
      return tx.updateTable('templates').set(patch).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
    },

    async findByHash(hashId: string, tx: Tx = db): Promise<TemplateRow | undefined> {
      return tx.selectFrom('templates').selectAll().where('hash_id', '=', hashId).executeTakeFirst();
    },

    async findById(id: number, tx: Tx = db): Promise<TemplateRow | undefined> {
      return tx.selectFrom('templates').selectAll().where('id', '=', id).executeTakeFirst();
    },

    /** Locks the row for an edit on PostgreSQL, so two concurrent edits of one template serialise. */
    async findByHashForUpdate(hashId: string, dialect: 'sqlite' | 'postgres', tx: Tx): Promise<TemplateRow | undefined> {
      let q = tx.selectFrom('templates').selectAll().where('hash_id', '=', hashId);
      if (dialect === 'postgres') q = q.forUpdate();
      return q.executeTakeFirst();
    },

    async remove(id: number, tx: Tx = db): Promise<boolean> {
      const r = await tx.deleteFrom('templates').where('id', '=', id).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },

    /** One more instance created from the template (popularity and last use, spec search fields). */
    async recordUse(id: number, now: number, tx: Tx = db): Promise<void> {
      await tx
        .updateTable('templates')
        .set({ count_created: sql`count_created + 1`, recent_create_date: now })
        .where('id', '=', id)
        .execute();
    },

    /** Templates the scope may see (public ones and its own) matching every filter, most used first. */
    async search(scope: Scope, filters: ColumnFilter[], limit: number, tx: Tx = db): Promise<TemplateRow[]> {
      let q = tx
        .selectFrom('templates')
        .selectAll()
        .where((eb) => eb.or([eb('private', '=', 0), owned(scope)(eb)]));
      for (const f of filters) {
        q = q.where((eb) => {
          const sample = Array.isArray(f.value) ? f.value[0] : f.value;
          // Numbers compare as double precision: an integer column against 1.5 or 1e20 must not be a PostgreSQL
          // type error (a 500), just a comparison.
          const ref: any =
            typeof sample === 'number' ? sql`cast(${sql.ref(f.column)} as double precision)` : eb.ref(f.column);
          if (f.op === 'in' || f.op === 'notin') {
            const list = f.value as Array<string | number>;
            // `IN ()` is not SQL: an empty list matches nothing, an empty exclusion excludes nothing.
            if (list.length === 0) return f.op === 'in' ? sql<boolean>`1 = 0` : sql<boolean>`1 = 1`;
            return f.op === 'in' ? eb(ref, 'in', list as any) : eb(ref, 'not in', list as any);
          }
          if (f.value === null) return eb(ref, f.op === 'eq' ? 'is' : 'is not', null);
          return eb(ref, SQL_OP[f.op], f.value as any);
        });
      }
      return q.orderBy('count_created', 'desc').orderBy('id', 'asc').limit(limit).execute();
    },

    /** The scope's own templates, private and public, newest first. */
    async listOwned(scope: Scope, limit: number, tx: Tx = db): Promise<TemplateRow[]> {
      return tx.selectFrom('templates').selectAll().where((eb) => owned(scope)(eb)).orderBy('id', 'desc').limit(limit).execute();
    },

    ownedBy(row: Pick<TemplateRow, 'user_id' | 'team_id'>, scope: Scope): boolean {
      return scope.teamId !== null ? row.team_id === scope.teamId : row.team_id === null && row.user_id === scope.userId;
    },
  };
}

export type TemplatesStore = ReturnType<typeof templatesStore>;

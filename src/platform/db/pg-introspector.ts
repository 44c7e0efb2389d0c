import {
  PostgresDialect,
  sql,
  type ColumnMetadata,
  type DatabaseIntrospector,
  type DatabaseMetadata,
  type DatabaseMetadataOptions,
  type Kysely,
  type SchemaMetadata,
  type TableMetadata,
} from 'kysely';

/**
 * PostgreSQL introspection limited to the connection's own schema (its search_path).
 *
 * Kysely's own introspector reads every schema of the database and calls `has_schema_privilege` on each; several
 * gpuplane databases may share one PostgreSQL (one schema each, as the tests do), and a schema dropped while that
 * query runs makes it fail with "schema … does not exist". Its migrator asks it whether its tables exist at every
 * start, so start-up could fail because of someone else's schema.
 */
export class CurrentSchemaIntrospector implements DatabaseIntrospector {
  constructor(private readonly db: Kysely<any>) {}

  async getSchemas(): Promise<SchemaMetadata[]> {
    const { rows } = await sql<{ name: string }>`select current_schema() as name`.execute(this.db);
    return rows.filter((r) => r.name !== null);
  }

  async getTables(options: DatabaseMetadataOptions = { withInternalKyselyTables: false }): Promise<TableMetadata[]> {
    const { rows } = await sql<{
      table_name: string;
      table_type: string;
      table_schema: string;
      column_name: string | null;
      data_type: string | null;
      udt_schema: string | null;
      is_nullable: string | null;
      column_default: string | null;
    }>`
      select t.table_name, t.table_type, t.table_schema, c.column_name, c.udt_name as data_type, c.udt_schema,
             c.is_nullable, c.column_default
      from information_schema.tables t
      left join information_schema.columns c on c.table_schema = t.table_schema and c.table_name = t.table_name
      where t.table_schema = current_schema()
      order by t.table_name, c.ordinal_position`.execute(this.db);
    const tables = new Map<string, TableMetadata & { columns: ColumnMetadata[] }>();
    for (const r of rows) {
      if (!options.withInternalKyselyTables && r.table_name.startsWith('kysely_migration')) continue;
      let t = tables.get(r.table_name);
      if (!t) {
        t = { name: r.table_name, schema: r.table_schema, isView: r.table_type === 'VIEW', columns: [] };
        tables.set(r.table_name, t);
      }
      if (r.column_name === null) continue;
      t.columns.push({
        name: r.column_name,
        dataType: r.data_type ?? '',
        dataTypeSchema: r.udt_schema ?? undefined,
        isNullable: r.is_nullable === 'YES',
        isAutoIncrementing: (r.column_default ?? '').startsWith('nextval('),
        hasDefaultValue: r.column_default !== null,
      });
    }
    return [...tables.values()];
  }

  async getMetadata(options?: DatabaseMetadataOptions): Promise<DatabaseMetadata> {
    return { tables: await this.getTables(options) };
  }
}

/** PostgresDialect whose introspection stays within the current schema. */
export class SchemaScopedPostgresDialect extends PostgresDialect {
  override createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return new CurrentSchemaIntrospector(db);
  }
}

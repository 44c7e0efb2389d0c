import type { Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/** 0010_teams (until issue 30, 0007_teams): teams, their roles, members and invitations (teams-tables.ts). */
export const teamsMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col
      .id(db.schema.createTable('teams'), dialect)
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('owner_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('created_at', col.time, (c) => c.notNull())
      .execute();

    await col
      .id(db.schema.createTable('team_roles'), dialect)
      .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('permissions', 'text')
      .addColumn('is_owner', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addUniqueConstraint('team_roles_team_name', ['team_id', 'name'])
      .execute();

    await col
      .id(db.schema.createTable('team_members'), dialect)
      .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
      .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('role_id', 'integer', (c) => c.notNull().references('team_roles.id'))
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addUniqueConstraint('team_members_team_user', ['team_id', 'user_id'])
      .execute();
    await db.schema.createIndex('team_members_user').on('team_members').column('user_id').execute();

    await col
      .id(db.schema.createTable('team_invitations'), dialect)
      .addColumn('team_id', 'integer', (c) => c.notNull().references('teams.id').onDelete('cascade'))
      .addColumn('email', 'text', (c) => c.notNull())
      .addColumn('role_id', 'integer', (c) => c.notNull().references('team_roles.id'))
      .addColumn('code_hash', 'text', (c) => c.notNull().unique())
      .addColumn('invited_by', 'integer', (c) => c.notNull())
      .addColumn('created_at', col.time, (c) => c.notNull())
      .addColumn('expires_at', col.time, (c) => c.notNull())
      .addColumn('accepted_at', col.time)
      .execute();
    await db.schema.createIndex('team_invitations_team').on('team_invitations').column('team_id').execute();
  },
});

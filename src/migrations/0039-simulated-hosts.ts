import { sql, type Kysely } from 'kysely';
import { col, type DialectMigration } from '../platform/db/migrations.js';

/**
 * 0039_simulated_hosts: the simulated hosts' runtime and agent state (emulator/simulated-hosts/simhost-tables.ts),
 * replacing the instances' boot timers (`instances.boot_step_at`, `boot_running_at` and the `instance.boot` job, gone
 * in 0040). A database of that time is taken over as a host coming back finds it: a running instance of a simulated
 * machine has a running container (its ports as shown), an exited one an exited container, each with its image on
 * the machine; an `unknown` or `offline` one is silent until `recover`; a boot under way is due for the simulated
 * agent when its old step was. Until issue 30, the first part of 0032_simhost.
 */
export const simulatedHostsMigration: DialectMigration = (dialect) => ({
  async up(db: Kysely<any>) {
    await col
      .id(db.schema.createTable('sim_containers'), dialect)
      .addColumn('machine_id', 'integer', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull().unique())
      .addColumn('instance_id', 'integer')
      .addColumn('generation', 'integer')
      .addColumn('image', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('exit_code', 'integer')
      .addColumn('finished_at', col.time)
      .addColumn('ports', 'text', (c) => c.notNull().defaultTo('{}'))
      .addColumn('created_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('sim_containers_machine').on('sim_containers').column('machine_id').execute();
    await db.schema
      .createTable('sim_images')
      .addColumn('machine_id', 'integer', (c) => c.notNull())
      .addColumn('image', 'text', (c) => c.notNull())
      .addColumn('ready_at', col.time)
      .addPrimaryKeyConstraint('sim_images_pk', ['machine_id', 'image'])
      .execute();
    await db.schema
      .createTable('sim_instances')
      .addColumn('instance_id', 'integer', (c) => c.primaryKey())
      .addColumn('machine_id', 'integer', (c) => c.notNull())
      .addColumn('generation', 'integer')
      .addColumn('boot', 'integer')
      .addColumn('stopped', 'integer')
      .addColumn('silent', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('crash', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.createIndex('sim_instances_machine').on('sim_instances').column('machine_id').execute();
    await col
      .id(db.schema.createTable('sim_due'), dialect)
      .addColumn('machine_id', 'integer', (c) => c.notNull())
      .addColumn('due_at', col.time, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('sim_due_at').on('sim_due').columns(['due_at', 'machine_id']).execute();
    await db.schema.createIndex('sim_due_machine').on('sim_due').column('machine_id').execute();

    // Live instances of simulated machines (a machine with an agent row is a real host's).
    const simulated = sql`i.destroyed_at is null and i.machine_id is not null
      and not exists (select 1 from agent_machines a where a.machine_id = i.machine_id)`;
    const boots = sql`(select count(*) from instance_events e where e.instance_id = i.id and e.actual_status is null)`;
    await sql`insert into sim_containers (machine_id, name, instance_id, generation, image, status, exit_code, finished_at, ports, created_at)
      select i.machine_id, 'gpuplane-' || i.machine_id || '-' || i.id, i.id, i.generation, i.image,
        case when i.actual_status = 'running' then 'running' else 'exited' end,
        case when i.actual_status = 'running' then null else 1 end,
        null,
        case when i.actual_status = 'running' then coalesce(i.ports, '{}') else '{}' end,
        i.created_at
      from instances i where ${simulated} and i.actual_status in ('running', 'exited')`.execute(db);
    await sql`insert into sim_images (machine_id, image, ready_at)
      select distinct machine_id, image, 0 from sim_containers`.execute(db);
    await sql`insert into sim_instances (instance_id, machine_id, generation, boot, stopped, silent)
      select i.id, i.machine_id,
        case when i.actual_status in ('running', 'exited') then i.generation else null end,
        case when i.actual_status in ('running', 'exited') then ${boots} else null end,
        case when i.actual_status in ('running', 'exited') then 0 else null end,
        case when i.actual_status in ('unknown', 'offline') then 1 else 0 end
      from instances i where ${simulated} and i.actual_status in ('running', 'exited', 'unknown', 'offline')`.execute(db);
    await sql`insert into sim_due (machine_id, due_at)
      select i.machine_id, min(i.boot_step_at) from instances i
      where ${simulated} and i.boot_step_at is not null group by i.machine_id`.execute(db);
    await sql`insert into jobs (kind, due_at, payload, ref)
      select 'simhost.step', min(due_at), '{}', null from sim_due having count(*) > 0`.execute(db);
  },
});

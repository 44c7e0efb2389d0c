/**
 * The instances feature's SQL for the agent protocol's server (src/agent-server/, through instances-agent-contract.ts):
 * what a real host's desired state is built from, read for its agent. Two of these are parts, not statements: the
 * agent server's hottest statements (an idle machine's heartbeat, a held long-poll's fingerprint) are each one
 * statement over its own tables and these, so the instances feature gives the parts and the agent server joins them
 * (10,000 agents heartbeat every 10 s; docs/PERFORMANCE.md).
 */
import { expressionBuilder, sql, type Expression, type RawBuilder, type SqlBool } from 'kysely';
import type { Tx } from '../platform/db/connect.js';
import type { Database } from '../platform/db/schema.js';

/**
 * The tests that a machine (`machineId`, a column of the caller's statement) has work for its agent here: a live
 * instance, an unanswered `execute`, an unanswered snapshot. Without any, the instances feature puts nothing in its
 * desired state.
 */
export function instanceWorkOn(machineId: Expression<number>): { liveInstance: Expression<SqlBool>; openCommand: Expression<SqlBool>; openSnapshot: Expression<SqlBool> } {
  const eb = expressionBuilder<Database, never>();
  return {
    liveInstance: eb.exists(eb.selectFrom('instances').select('instances.id').where('instances.machine_id', '=', machineId).where('instances.destroyed_at', 'is', null)),
    openCommand: eb.exists(eb.selectFrom('instance_commands').select('instance_commands.id').where('instance_commands.machine_id', '=', machineId).where('instance_commands.answered_at', 'is', null)),
    openSnapshot: eb.exists(eb.selectFrom('instance_snapshots').select('instance_snapshots.id').where('instance_snapshots.machine_id', '=', machineId).where('instance_snapshots.answered_at', 'is', null)),
  };
}

/** A `union all` part of a fingerprint statement: rows of (machine_id, k, a, b, c), `k` naming the part. */
export type FingerprintPart = RawBuilder<unknown>;

/**
 * The instances feature's parts of a machines' fingerprint statement (agent-server-store.ts `fingerprints`), for the
 * machines in `list` (their ids, joined): its live instances (each state change bumps `state_version`, each recycle
 * or update `generation`), their SSH keys, their renters' account keys, the account keys of the team members let into
 * a team's instance (`teamMembers`: a subquery of (team_id, user_id), the teams contract's `membersAllowingSql`), and
 * its `execute` and snapshot requests (a new one, or one answered). `num` casts an aggregate to the statement's one
 * number type.
 */
export function instanceFingerprintParts(list: RawBuilder<unknown>, num: (e: RawBuilder<unknown>) => RawBuilder<unknown>, teamMembers: RawBuilder<unknown>) {
  return {
    instances: sql`select machine_id, 'i' as k, ${num(sql`count(*)`)} as a, ${num(sql`sum(state_version)`)} as b, ${num(sql`sum(generation)`)} as c
            from instances where machine_id in (${list}) and destroyed_at is null group by machine_id`,
    // Which instances, not only how many: one destroyed and another rented between two reads kept the count and
    // could keep both sums (state_version and generation start alike), handing a renewed poll the stale state.
    instanceIds: sql`select machine_id, 'j', ${num(sql`sum(id)`)}, ${num(sql`max(id)`)}, ${num(sql`min(id)`)}
            from instances where machine_id in (${list}) and destroyed_at is null group by machine_id`,
    sshKeys: sql`select i.machine_id, 'k', ${num(sql`count(*)`)}, ${num(sql`max(k.id)`)}, ${num(sql`0`)}
            from instance_ssh_keys k join instances i on i.id = k.instance_id
            where i.machine_id in (${list}) and i.destroyed_at is null group by i.machine_id`,
    // The renters' account keys go into their containers too: the one read of another feature's table here (the
    // ssh-keys feature's), joined to the instances in the same statement.
    accountKeys: sql`select i.machine_id, 'a', ${num(sql`count(*)`)}, ${num(sql`max(s.id)`)}, ${num(sql`max(s.updated_at)`)}
            from ssh_keys s join instances i on i.user_id = s.user_id
            where i.machine_id in (${list}) and i.destroyed_at is null group by i.machine_id`,
    // A team's instance lets in the account keys of its members with instance access (issue 31): a member joining,
    // leaving, changing role, or adding, removing or changing a key changes these sums. `teamMembers` is the teams
    // feature's SQL, passed in by the agent server.
    teamKeys: sql`select i.machine_id, 't', ${num(sql`count(*)`)}, ${num(sql`sum(s.id)`)}, ${num(sql`sum(s.updated_at)`)}
            from instances i join (${teamMembers}) tm on tm.team_id = i.team_id join ssh_keys s on s.user_id = tm.user_id
            where i.machine_id in (${list}) and i.destroyed_at is null group by i.machine_id`,
    commands: sql`select machine_id, 'c', ${num(sql`max(id)`)}, ${num(sql`count(answered_at)`)}, ${num(sql`0`)}
            from instance_commands where machine_id in (${list}) group by machine_id`,
    snapshots: sql`select machine_id, 's', ${num(sql`max(id)`)}, ${num(sql`count(answered_at)`)}, ${num(sql`0`)}
            from instance_snapshots where machine_id in (${list}) group by machine_id`,
  } satisfies Record<string, FingerprintPart>;
}

/** How many times each instance was booted: its `boot` counter (events where a boot began: status null). */
export async function bootCounts(instanceIds: number[], tx: Tx): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (!instanceIds.length) return out;
  const rows = await tx.selectFrom('instance_events').select(['instance_id', (eb) => eb.fn.countAll<number>().as('n')])
    .where('instance_id', 'in', instanceIds).where('actual_status', 'is', null).groupBy('instance_id').execute();
  for (const r of rows) out.set(r.instance_id, Number(r.n));
  return out;
}

/** SSH keys attached to each instance. */
export async function sshKeysOf(instanceIds: number[], tx: Tx): Promise<Map<number, string[]>> {
  const out = new Map<number, string[]>();
  if (!instanceIds.length) return out;
  const rows = await tx.selectFrom('instance_ssh_keys').select(['instance_id', 'ssh_key']).where('instance_id', 'in', instanceIds).orderBy('id').execute();
  for (const r of rows) out.set(r.instance_id, [...(out.get(r.instance_id) ?? []), r.ssh_key]);
  return out;
}

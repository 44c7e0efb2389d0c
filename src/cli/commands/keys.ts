/** API keys (`create/show/delete api-key`), the team (`create/destroy team`, members) and team roles. */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { action, intArg, UsageError } from '../context.js';
import { renderRecord, columnsOption, utc } from '../output.js';
import type { Groups } from '../program.js';

/** A permission document from a JSON file (`{"api": {"instance_read": {}, …}}`), or an error naming the file. */
function permissionsFrom(file: string | undefined): unknown {
  if (file === undefined) return undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new UsageError(`cannot read the permission file ${file}`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`the permission file ${file} is not JSON`);
  }
}

const categories = (p: unknown) => {
  const api = (p as { api?: Record<string, unknown> } | null)?.api;
  return api ? Object.keys(api).join(',') : JSON.stringify(p);
};
const keyColumns = [
  { key: 'id', header: 'ID', align: 'right' as const },
  { key: 'name', header: 'Name' },
  { key: 'team_id', header: 'Team', align: 'right' as const },
  { key: 'permissions', header: 'Permissions', fmt: categories },
  { key: 'created_at', header: 'Created (UTC)', fmt: utc },
  { key: 'last_used_at', header: 'Last used (UTC)', fmt: utc },
];

export function registerKeys(g: Groups, verb: (name: string, what: string) => Command): void {
  g.create
    .command('api-key')
    .description('create an API key; its secret is printed once')
    .option('--name <name>', 'a name for the key')
    .option('--permission_file <file>', 'JSON permission document; without it the key has the rights of the key in use')
    .option('--team-id <id>', 'make a key that acts for this team', intArg('--team-id'))
    .addHelpText('after', '\nExample:\n  gpuplane create api-key --name ci --permission_file perms.json\n  (perms.json: {"api": {"instance_read": {}, "instance_write": {}}})')
    .action(
      action(async (ctx, o: { name?: string; permission_file?: string; teamId?: number }) => {
        const r = await ctx.client.apiKeys.create({ name: o.name, permissions: permissionsFrom(o.permission_file), team_id: o.teamId });
        ctx.out.print(r, () => `created api-key ${r.id}${r.name ? ` (${r.name})` : ''}\nkey (shown only this once): ${r.key}`);
      }),
    );
  g.show
    .command('api-keys')
    .description('list your API keys (never their secrets)')
    .addOption(columnsOption(keyColumns))
    .addHelpText('after', '\nExample:\n  gpuplane show api-keys')
    .action(
      action(async (ctx) => {
        const r = await ctx.client.apiKeys.list();
        ctx.out.print(r.apikeys, () => ctx.out.table(r.apikeys, keyColumns));
      }),
    );
  g.show
    .command('api-key')
    .description('show one API key')
    .argument('<id>', 'API key id', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane show api-key 4')
    .action(
      action(async (ctx, id: number) => {
        const k = await ctx.client.apiKeys.show(id);
        ctx.out.print(k, () => renderRecord(k, [
          { key: 'id' }, { key: 'name' }, { key: 'team_id', label: 'team' }, { key: 'permissions', fmt: (p) => JSON.stringify(p) },
          { key: 'created_at', label: 'created (UTC)', fmt: utc }, { key: 'last_used_at', label: 'last used (UTC)', fmt: utc },
        ]));
      }),
    );
  g.delete
    .command('api-key')
    .description('revoke an API key')
    .argument('<id>', 'API key id', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane delete api-key 4')
    .action(
      action(async (ctx, id: number) => {
        const r = await ctx.client.apiKeys.remove(id);
        ctx.out.print(r, () => r.msg);
      }),
    );

  verb('reset', 'reset: api-key')
    .command('api-key')
    .description('replace the API key in use: it stops working at once; the new key is printed once (save it with `set api-key`)')
    .addHelpText('after', '\nExample:\n  gpuplane reset api-key')
    .action(
      action(async (ctx) => {
        const r = await ctx.client.apiKeys.reset();
        ctx.out.print(r, () => `New api-key: ${r.new_api_key}\n(the old key no longer works; save this one with \`gpuplane set api-key\`)`);
      }),
    );

  // Teams (contract §3).
  g.create
    .command('team')
    .description('create a team; you become its owner')
    .requiredOption('--team_name <name>', 'the team name')
    .addHelpText('after', '\nExample:\n  gpuplane create team --team_name research')
    .action(
      action(async (ctx, o: { team_name: string }) => {
        const r = await ctx.client.team.create(o.team_name);
        ctx.out.print(r, () => `created team ${(r as { id?: number }).id ?? ''} (${o.team_name})`);
      }),
    );
  verb('destroy', 'destroy: instance, team')
    .command('team')
    .description('delete your team (owner only); its keys stop working')
    .addHelpText('after', '\nExample:\n  gpuplane destroy team')
    .action(
      action(async (ctx) => {
        const r = await ctx.client.team.destroy();
        ctx.out.print(r, () => r.msg ?? 'team destroyed');
      }),
    );
  g.show
    .command('members')
    .description('list the members of your team (and pending invitations)')
    .addHelpText('after', '\nExample:\n  gpuplane show members')
    .action(
      action(async (ctx) => {
        const r = await ctx.client.team.members();
        ctx.out.print(r, () => {
          const members = ctx.out.table(r.members, [
            { key: 'id', header: 'ID', align: 'right' },
            { key: 'email', header: 'E-mail' },
            { key: 'role', header: 'Role' },
            { key: 'joined_at', header: 'Joined (UTC)', fmt: utc },
          ]);
          const inv = r.invitations?.length
            ? `\n\nInvitations:\n${ctx.out.table(r.invitations, [{ key: 'email', header: 'E-mail' }, { key: 'role', header: 'Role' }, { key: 'expires_at', header: 'Expires (UTC)', fmt: utc }])}`
            : '';
          return members + inv;
        });
      }),
    );
  verb('invite', 'invite: member')
    .command('member')
    .description('invite someone to your team with a role')
    .requiredOption('--email <email>', 'who to invite')
    .requiredOption('--role <role>', 'the role they get')
    .addHelpText('after', '\nExample:\n  gpuplane invite member --email ada@example.com --role member')
    .action(
      action(async (ctx, o: { email: string; role: string }) => {
        const r = await ctx.client.team.invite(o.email, o.role);
        ctx.out.print(r, () => r.msg ?? `invited ${o.email}`);
      }),
    );
  verb('accept', 'accept: invitation')
    .command('invitation')
    .description('join a team: accept an invitation with the code e-mailed to you (use your own personal key)')
    .argument('<code>', 'the invitation code from the e-mail')
    .addHelpText('after', '\nExample:\n  gpuplane accept invitation 7Q2M-K9XW-3TPA')
    .action(
      action(async (ctx, code: string) => {
        const r = await ctx.client.team.accept(code);
        ctx.out.print(r, () => `joined team ${r.team_id} (${r.team_name}) as ${r.role}`);
      }),
    );
  const remove = verb('remove', 'remove: member, team-role');
  remove
    .command('member')
    .description('remove a member from your team (by user id)')
    .argument('<id>', 'the member’s user id', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane remove member 17')
    .action(
      action(async (ctx, id: number) => {
        const r = await ctx.client.team.removeMember(id);
        ctx.out.print(r, () => r.msg ?? `removed member ${id}`);
      }),
    );

  const roleColumns = [
    { key: 'id', header: 'ID', align: 'right' as const },
    { key: 'name', header: 'Name' },
    { key: 'permissions', header: 'Permissions', fmt: (p: unknown) => (Array.isArray(p) ? p.join(',') : categories(p)) },
  ];
  g.show
    .command('team-role')
    .description('show a team role by name')
    .argument('<name>', 'role name')
    .addHelpText('after', '\nExample:\n  gpuplane show team-role member')
    .action(
      action(async (ctx, name: string) => {
        const r = await ctx.client.team.role(name);
        ctx.out.print(r, () => ctx.out.table([r], roleColumns));
      }),
    );
  g.show
    .command('team-roles')
    .description('list your team’s roles')
    .addHelpText('after', '\nExample:\n  gpuplane show team-roles')
    .action(
      action(async (ctx) => {
        const r = await ctx.client.team.roles();
        ctx.out.print(r, () => ctx.out.table(r, roleColumns));
      }),
    );
  g.create
    .command('team-role')
    .description('add a role to your team')
    .requiredOption('--name <name>', 'role name')
    .requiredOption('--permissions <file>', 'JSON permission document')
    .addHelpText('after', '\nExample:\n  gpuplane create team-role --name viewer --permissions viewer.json')
    .action(
      action(async (ctx, o: { name: string; permissions: string }) => {
        const r = await ctx.client.team.createRole(o.name, permissionsFrom(o.permissions));
        ctx.out.print(r, () => `created team-role ${o.name}`);
      }),
    );
  g.update
    .command('team-role')
    .description('change a team role (by numeric id)')
    .argument('<id>', 'role id', intArg('id'))
    .option('--name <name>', 'new name')
    .option('--permissions <file>', 'JSON permission document')
    .addHelpText('after', '\nExample:\n  gpuplane update team-role 3 --permissions viewer.json')
    .action(
      action(async (ctx, id: number, o: { name?: string; permissions?: string }) => {
        if (o.name === undefined && o.permissions === undefined) throw new UsageError('nothing to change: give --name or --permissions');
        const r = await ctx.client.team.updateRole(id, { name: o.name, permissions: permissionsFrom(o.permissions) });
        ctx.out.print(r, () => `updated team-role ${id}`);
      }),
    );
  remove
    .command('team-role')
    .description('remove a team role by name')
    .argument('<name>', 'role name')
    .addHelpText('after', '\nExample:\n  gpuplane remove team-role viewer')
    .action(
      action(async (ctx, name: string) => {
        const r = await ctx.client.team.removeRole(name);
        ctx.out.print(r, () => r.msg ?? `removed team-role ${name}`);
      }),
    );
}

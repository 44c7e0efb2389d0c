/** `show audit-logs`, `show ipaddrs`, `show connections`. */
import { action } from '../context.js';
import { utc } from '../output.js';
import type { Groups } from '../program.js';

const auditColumns = [
  { key: 'created_at', header: 'Time (UTC)', fmt: utc },
  { key: 'action', header: 'Action' },
  { key: 'api_route', header: 'Route' },
  { key: 'api_key_id', header: 'Key', align: 'right' as const },
  { key: 'ip_address', header: 'Address' },
];

export function registerAudit(g: Groups): void {
  g.show
    .command('audit-logs')
    .description('your security-relevant actions, newest first (logins, 2FA and key changes, instances, credit, roles)')
    .addHelpText('after', '\nExample:\n  gpuplane show audit-logs')
    .action(
      action(async (ctx) => {
        const rows = await ctx.client.audit.logs();
        ctx.out.print(rows, () => (rows.length ? ctx.out.table(rows as unknown as Record<string, unknown>[], auditColumns) : 'no audit log entries'));
      }),
    );
  g.show
    .command('connections')
    .description('your cloud storage connections (none can be made yet)')
    .addHelpText('after', '\nExample:\n  gpuplane show connections')
    .action(
      action(async (ctx) => {
        const rows = await ctx.client.cloud.connections();
        ctx.out.print(rows, () => (rows.length ? rows.map((r) => `${r.id}\t${r.name}\t${r.cloud_type}`).join('\n') : 'no cloud connections'));
      }),
    );
  g.show
    .command('ipaddrs')
    .description('the addresses your requests came from, and when each was first seen')
    .addHelpText('after', '\nExample:\n  gpuplane show ipaddrs')
    .action(
      action(async (ctx) => {
        const rows = await ctx.client.audit.ipaddrs();
        ctx.out.print(rows, () => (rows.length ? rows.map((r) => `${r.ip}\t${utc(r.first_seen)}`).join('\n') : 'no addresses yet'));
      }),
    );
}

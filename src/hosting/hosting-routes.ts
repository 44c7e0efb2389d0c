/**
 * The host side of the API as the vastai client calls it (client-compat-more.md §a). Reads are `machine_read`,
 * changes `machine_write`; earnings are `machine_read` too (a host's own ledger view).
 */
import type { TypedApp } from '../platform/http.js';
import { principalOf } from '../platform/auth.js';
import { ErrorReply } from '../platform/schemas.js';
import type { HostingService } from './hosting-service.js';
import type { HostingEarnings } from './hosting-earnings.js';
import {
  CancelMaintBody,
  CleanupReply,
  CreateAsksBody,
  CreateAsksReply,
  DefJobBody,
  DefragBody,
  DefragReply,
  EarningsQuery,
  EarningsReply,
  MachineIdParams,
  MachineReply,
  MachinesQuery,
  MachinesReply,
  MaintBody,
  MaintenancesQuery,
  MaintenancesReply,
  MinBidBody,
  OkReply,
  ReportsReply,
} from './hosting-schemas.js';

const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 404: ErrorReply };
const tags = ['machines'];
const read = { category: 'machine_read' as const };
const write = { category: 'machine_write' as const };

export async function hostingRoutes(app: TypedApp, { hosting, hostingEarnings }: { hosting: HostingService; hostingEarnings: HostingEarnings }): Promise<void> {
  app.get('/api/v0/machines', {
    config: read,
    schema: { summary: 'Your machines (`owner=me`; admins: `owner=all` for every host\'s)', tags, querystring: MachinesQuery, response: { 200: MachinesReply, ...errors } },
  }, async (request) => hosting.machines(principalOf(request), request.query.owner));

  app.get('/api/v0/machines/maintenances', {
    config: read,
    schema: {
      summary: 'Maintenance windows to come of your machines, or of `machine_ids=[…]` (yours, or ones you rent on)',
      tags, querystring: MaintenancesQuery, response: { 200: MaintenancesReply, ...errors },
    },
  }, async (request) => hosting.maintenances(principalOf(request), request.query.machine_ids));

  app.get('/api/v0/machines/:id', {
    config: read,
    schema: { summary: 'One of your machines, as a list of one row', tags, params: MachineIdParams, querystring: MachinesQuery, response: { 200: MachineReply, ...errors } },
  }, async (request) => hosting.machine(principalOf(request), request.params.id));

  app.put('/api/v0/machines/create_asks/', {
    config: write,
    schema: {
      summary: 'List a machine for rent: prices, smallest bundle, end date or rolling duration',
      description: 'Fields left null keep their value. A machine is offered while it is listed, online and not in maintenance.',
      tags, body: CreateAsksBody, response: { 200: CreateAsksReply, ...errors },
    },
  }, async (request) => hosting.createAsks(principalOf(request), request.body));

  app.delete('/api/v0/machines/:id/asks/', {
    config: write,
    schema: { summary: 'Unlist a machine: no new rentals; running ones continue', tags, params: MachineIdParams, response: { 200: OkReply, ...errors } },
  }, async (request) => hosting.unlist(principalOf(request), request.params.id));

  app.put('/api/v0/machines/:id/minbid/', {
    config: write,
    schema: { summary: 'Set the lowest bid per GPU per hour', tags, params: MachineIdParams, body: MinBidBody, response: { 200: OkReply, ...errors } },
  }, async (request) => hosting.setMinBid(principalOf(request), request.params.id, request.body.price));

  app.put('/api/v0/machines/create_bids/', {
    config: write,
    schema: { summary: 'Set the machine\'s default job: the host\'s bid instance on its idle GPUs, displaced by renters', tags, body: DefJobBody, response: { 200: OkReply, ...errors } },
  }, async (request) => hosting.setDefjob(principalOf(request), request.body));

  app.delete('/api/v0/machines/:id/defjob/', {
    config: write,
    schema: { summary: 'Remove the machine\'s default job', tags, params: MachineIdParams, response: { 200: OkReply, ...errors } },
  }, async (request) => hosting.removeDefjob(principalOf(request), request.params.id));

  app.put('/api/v0/machines/:id/dnotify/', {
    config: write,
    schema: {
      summary: 'Schedule a maintenance window (`sdate` epoch seconds, `duration` hours); its renters see it, no new rentals during it',
      tags, params: MachineIdParams, body: MaintBody, response: { 200: OkReply, ...errors },
    },
  }, async (request) => hosting.scheduleMaint(principalOf(request), request.params.id, request.body));

  app.put('/api/v0/machines/:id/cancel_maint/', {
    config: write,
    schema: { summary: 'Cancel every maintenance window of the machine', tags, params: MachineIdParams, body: CancelMaintBody, response: { 200: OkReply, ...errors } },
  }, async (request) => hosting.cancelMaint(principalOf(request), request.params.id));

  app.put('/api/v0/machines/:id/cleanup/', {
    config: write,
    schema: { summary: 'Delete the machine\'s expired instances', tags, params: MachineIdParams, response: { 200: CleanupReply, ...errors } },
  }, async (request) => hosting.cleanup(principalOf(request), request.params.id));

  app.post('/api/v0/machines/:id/force_delete/', {
    config: write,
    schema: { summary: 'Delete a machine; refused (409) while clients have instances on it', tags, params: MachineIdParams, response: { 200: OkReply, 409: ErrorReply, ...errors } },
  }, async (request) => hosting.forceDelete(principalOf(request), request.params.id));

  app.get('/api/v0/machines/:id/reports/', {
    config: read,
    schema: { summary: 'Renters\' reports about the machine (none can be filed yet: an empty list)', tags, params: MachineIdParams, response: { 200: ReportsReply, ...errors } },
  }, async (request) => hosting.reports(principalOf(request), request.params.id));

  app.put('/api/v0/machines/defrag_offers/', {
    config: write,
    schema: { summary: 'Re-pack GPU assignments (offers are already packed here)', tags, body: DefragBody, response: { 200: DefragReply, ...errors } },
  }, async (request) => hosting.defrag(principalOf(request), request.body.machine_ids));

  app.get('/api/v0/users/me/machine-earnings', {
    config: read,
    schema: {
      summary: 'What renters paid for your machines, less the service fee, per machine and per day',
      description: '`sday`/`eday`: days since 1970-01-01 (floats); the days from floor(sday) to floor(eday), both included. `machid`: a machine id or null.',
      tags, querystring: EarningsQuery, response: { 200: EarningsReply, ...errors },
    },
  }, async (request) => hostingEarnings.earnings(principalOf(request), request.query));
}

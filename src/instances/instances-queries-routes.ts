import type { TypedApp } from '../platform/http.js';
import { principalOf } from '../platform/auth.js';
import { ErrorReply } from '../platform/schemas.js';
import type { InstancesModule } from './instances-module.js';
import { FetchContractsBody, FetchContractsReply, InstanceFiltersReply } from './instances-queries-schemas.js';

const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply };

/** Queries over the caller's instances (docs/spec/client-compat-more.md §c "Instance filter values and contract lookup"). */
export async function instancesQueriesRoutes(app: TypedApp, instances: Pick<InstancesModule, 'queries'>): Promise<void> {
  app.get('/api/v0/instances/filters/', {
    config: { category: 'instance_read' },
    schema: {
      tags: ['instances'],
      summary: 'The distinct {actual_status, verification, gpu_name} of your live instances (`show instances` offers them as filters)',
      response: { 200: InstanceFiltersReply, ...errors },
    },
  }, async (request) => instances.queries.filters(principalOf(request)));

  app.post('/api/v0/contracts/fetch/', {
    config: { category: 'instance_read' },
    schema: {
      tags: ['instances'],
      summary: 'Your contracts (instances, destroyed ones too) with this `label` and/or among `contract_ids`',
      body: FetchContractsBody,
      response: { 200: FetchContractsReply, ...errors },
    },
  }, async (request) => instances.queries.fetchContracts(principalOf(request), request.body ?? {}));
}

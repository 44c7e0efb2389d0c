import type { TypedApp } from '../platform/http.js';
import { principalOf } from '../platform/auth.js';
import { ErrorReply } from '../platform/schemas.js';
import type { ScheduledJobsService } from './scheduled-jobs-service.js';
import {
  ScheduledJobBody, ScheduledJobCreated, ScheduledJobDeleted, ScheduledJobExists, ScheduledJobParams, ScheduledJobsReply,
  ScheduledJobUpdateBody, ScheduledJobUpdated,
} from './scheduled-jobs-schemas.js';

const tags = ['scheduled-jobs'];
const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 404: ErrorReply };
// The permission categories of the real service (the vastai client's scripts/data/api_scopes.json).
const READ = { category: 'instance_read' } as const;
const WRITE = { category: 'instance_write' } as const;

/** `/api/v0/commands/schedule_job/` as `vastai … --schedule`, `show scheduled-jobs` and `delete scheduled-job` call it. */
export async function scheduledJobsRoutes(app: TypedApp, { scheduledJobs }: { scheduledJobs: ScheduledJobsService }): Promise<void> {
  app.get('/api/v0/commands/schedule_job/', {
    config: READ,
    schema: { tags, summary: 'List your scheduled jobs (a bare list)', response: { 200: ScheduledJobsReply, ...errors } },
  }, async (request) => scheduledJobs.list(principalOf(request)));

  app.post('/api/v0/commands/schedule_job/', {
    config: WRITE,
    schema: {
      tags,
      summary: 'Schedule an API request to be replayed as you, hourly, daily or weekly',
      description: 'A job that repeats an existing one (same request and instance) is a 422 carrying `scheduled_job_id`, '
        + 'the job to update with PUT. The job runs with the rights of the key that made it, and is removed with its instance.',
      body: ScheduledJobBody,
      response: { 200: ScheduledJobCreated, 409: ErrorReply, 422: ScheduledJobExists, ...errors },
    },
  }, async (request) => scheduledJobs.create(principalOf(request), request.body));

  app.put('/api/v0/commands/schedule_job/:id/', {
    config: WRITE,
    schema: {
      tags,
      summary: 'Change a scheduled job; it then runs with the rights of the key that changed it',
      params: ScheduledJobParams,
      body: ScheduledJobUpdateBody,
      response: { 200: ScheduledJobUpdated, 409: ErrorReply, ...errors },
    },
  }, async (request) => scheduledJobs.update(principalOf(request), request.params.id, request.body ?? {}));

  app.delete('/api/v0/commands/schedule_job/:id/', {
    config: WRITE,
    schema: { tags, summary: 'Delete a scheduled job', params: ScheduledJobParams, response: { 200: ScheduledJobDeleted, ...errors } },
  }, async (request) => scheduledJobs.remove(principalOf(request), request.params.id));
}

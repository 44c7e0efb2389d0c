/** Scheduled jobs (`/api/v0/commands/schedule_job/`): API requests the server replays as you on a timetable. */
import type { Static } from 'typebox';
import type {
  ScheduledJob as ScheduledJobSchema, ScheduledJobBody, ScheduledJobCreated, ScheduledJobDeleted, ScheduledJobUpdateBody, ScheduledJobUpdated,
} from '../../scheduled-jobs/scheduled-jobs-schemas.js';
import type { Transport } from '../transport.js';

export type ScheduledJob = Static<typeof ScheduledJobSchema>;
export type NewScheduledJob = Static<typeof ScheduledJobBody>;
export type ScheduledJobChange = Static<typeof ScheduledJobUpdateBody>;

export function scheduledJobsApi(t: Transport) {
  const path = '/api/v0/commands/schedule_job/';
  return {
    list: () => t.request<ScheduledJob[]>('GET', path),
    /**
     * Schedules `request_method api_endpoint` with `request_body`. A job for the same request and instance already
     * exists: GpuplaneError with status 422, whose body's `scheduled_job_id` names the job to `update`.
     */
    create: (job: NewScheduledJob) => t.request<Static<typeof ScheduledJobCreated>>('POST', path, { body: job }),
    /** Changes the given fields; the job then runs with the rights of the key making this call. */
    update: (id: number, change: ScheduledJobChange) => t.request<Static<typeof ScheduledJobUpdated>>('PUT', `${path}${id}/`, { body: change }),
    remove: (id: number) => t.request<Static<typeof ScheduledJobDeleted>>('DELETE', `${path}${id}/`, { body: {} }),
  };
}

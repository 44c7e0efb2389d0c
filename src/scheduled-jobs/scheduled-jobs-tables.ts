import type { Generated } from 'kysely';

/**
 * Scheduled jobs (`/api/v0/commands/schedule_job/`, docs/spec/client-compat-more.md §d): a stored API request the
 * server replays as its owner on a timetable. The pending occurrence is a scheduler row (`jobs`, ref
 * `scheduled_job:<id>`); this row holds the request, the timetable, the grant it runs under and its last outcome.
 */
export interface ScheduledJobsTable {
  id: Generated<number>;
  /** Whose job: `user:<id>` (personal context) or `team:<id>` (team context; the team's members see it). */
  owner: string;
  /** The user who made or last changed it: the replay acts as this user. */
  user_id: number;
  team_id: number | null;
  /**
   * The API key that made or last changed the job: each run acts with its rights (never more) and stops while it is
   * revoked. Only its id is kept, never a secret.
   */
  key_id: number;
  /** The instance the job is about; the job is removed with it. Null for a job about no instance. */
  instance_id: number | null;
  api_endpoint: string;
  request_method: string;
  /** JSON text of the body to replay. */
  request_body: string;
  start_time: number;
  end_time: number;
  /** `HOURLY`, `DAILY` or `WEEKLY`. */
  frequency: string;
  /** 0-6, 0 = Sunday; null: every day. */
  day_of_the_week: number | null;
  /** 0-23 UTC; null: every hour. */
  hour_of_the_day: number | null;
  /** The minute of the hour the job runs at (always 0: on the hour). */
  min_of_the_hour: number;
  /** `owner|method|endpoint|instance`: one job per request and instance (a second create is the spec's 422). */
  dedupe_key: string;
  /** The pending occurrence, or null when none is left before `end_time`. */
  next_run_at: number | null;
  /** Occurrences run so far. */
  run_count: number;
  /** The due time of the last occurrence run. */
  last_run_at: number | null;
  /** The HTTP status the last replay answered; null while it runs (or when it never finished: the process stopped). */
  last_run_status: number | null;
  /** The reply's `msg` (or a note of why the request was not sent), at most a few hundred characters. */
  last_run_msg: string | null;
  created_at: number;
  updated_at: number;
}

export interface ScheduledJobsTables {
  scheduled_jobs: ScheduledJobsTable;
}

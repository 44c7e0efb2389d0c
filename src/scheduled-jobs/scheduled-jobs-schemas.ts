/**
 * TypeBox schemas of `/api/v0/commands/schedule_job/` (docs/spec/client-compat-more.md §d), exported so the SDK takes
 * its request and reply types from what the server validates.
 */
import { Type, type Static } from 'typebox';
import { Id, MAX_ID } from '../platform/schemas.js';

/** Most scheduled jobs one owner (a user, or a team) may hold. */
export const SCHEDULED_JOBS_MAX = 100;
/** Longest `api_endpoint`, and longest `request_body` as JSON text. */
export const API_ENDPOINT_MAX_CHARS = 512;
export const REQUEST_BODY_MAX_CHARS = 16_384;
/** Latest time a job may name (year 9999): a typo guard, and a bound for the occurrence arithmetic. */
export const MAX_EPOCH_S = 253_402_300_799;
/** Without `end_time`, a job ends this long after its start: the clients' own default (7 days). */
export const DEFAULT_WINDOW_S = 7 * 86_400;

/**
 * The request a job replays: a path of the API (no query string), with the methods the clients schedule (PUT, POST)
 * and DELETE, which the SDK's docstring also lists (a scheduled destroy). A GET changes nothing, so it is refused.
 */
export const API_ENDPOINT_PATTERN = '^/api/v[0-9]+/[A-Za-z0-9_./-]*$';

const Epoch = (description: string) => Type.Number({ minimum: 0, maximum: MAX_EPOCH_S, description });
const Frequency = Type.Union([Type.Literal('HOURLY'), Type.Literal('DAILY'), Type.Literal('WEEKLY')]);
const Method = Type.Union([Type.Literal('PUT'), Type.Literal('POST'), Type.Literal('DELETE')]);
const Day = Type.Union([Type.Integer({ minimum: 0, maximum: 6 }), Type.Null()], { description: '0-6, 0 = Sunday; null: every day' });
const Hour = Type.Union([Type.Integer({ minimum: 0, maximum: 23 }), Type.Null()], { description: '0-23 UTC; null: every hour' });
const Endpoint = Type.String({ minLength: 1, maxLength: API_ENDPOINT_MAX_CHARS, pattern: API_ENDPOINT_PATTERN, description: 'The path to replay, e.g. /api/v0/instances/reboot/7/' });
/** `cloud copy --schedule` sends the instance id as a string of digits, which the strict coercion reads as the id. */
const InstanceId = Type.Union([Id(), Type.Null()], { description: 'The instance the job is about (removed with it), or null' });
const RequestBody = Type.Record(Type.String(), Type.Unknown(), { description: 'The JSON body to replay' });

/**
 * `POST /api/v0/commands/schedule_job/`: the clients (`vastai … --schedule`, the SDK) send every key. `start_time` and
 * `end_time` may be left out here (gpuplane's own CLI does): then from the server's now, for DEFAULT_WINDOW_S.
 */
export const ScheduledJobBody = Type.Object(
  {
    start_time: Type.Optional(Epoch('Unix seconds: no run before it (default: now)')),
    end_time: Type.Optional(Epoch('Unix seconds: no run after it (default: 7 days after start_time)')),
    api_endpoint: Endpoint,
    request_method: Method,
    request_body: RequestBody,
    day_of_the_week: Type.Optional(Day),
    hour_of_the_day: Type.Optional(Hour),
    frequency: Frequency,
    instance_id: Type.Optional(InstanceId),
  },
  { additionalProperties: false },
);
export type ScheduledJobBody = Static<typeof ScheduledJobBody>;

/**
 * `PUT /api/v0/commands/schedule_job/{id}/`: the same fields, each optional (the SDK sends `request_body` and only the
 * fields it is given; `vastai`'s update after a 422 sends the whole create body).
 */
export const ScheduledJobUpdateBody = Type.Partial(ScheduledJobBody, { additionalProperties: false });
export type ScheduledJobUpdateBody = Static<typeof ScheduledJobUpdateBody>;

export const ScheduledJobParams = Type.Object({ id: Id() });

/** A job as `show scheduled-jobs` lists it, with its last run. */
export const ScheduledJob = Type.Object({
  id: Type.Integer(),
  user_id: Type.Integer({ description: 'Who made or last changed it; the replay acts as this user' }),
  instance_id: Type.Union([Type.Integer(), Type.Null()]),
  api_endpoint: Type.String(),
  request_method: Type.String(),
  request_body: RequestBody,
  start_time: Type.Number(),
  end_time: Type.Number(),
  day_of_the_week: Type.Union([Type.Integer(), Type.Null()]),
  hour_of_the_day: Type.Union([Type.Integer(), Type.Null()]),
  min_of_the_hour: Type.Integer({ description: 'Jobs run on the hour: 0' }),
  frequency: Type.String(),
  next_run_at: Type.Union([Type.Number(), Type.Null()], { description: 'The next occurrence; null when none is left' }),
  run_count: Type.Integer({ description: 'Occurrences run so far' }),
  last_run_at: Type.Union([Type.Number(), Type.Null()], { description: 'When the last occurrence was due' }),
  last_run_status: Type.Union([Type.Integer(), Type.Null()], { description: 'The HTTP status of the last replay; null while it runs or when it was not sent' }),
  last_run_msg: Type.Union([Type.String(), Type.Null()], { description: 'The last reply\'s msg, or why the request was not sent' }),
  created_at: Type.Number(),
  updated_at: Type.Number(),
});
export type ScheduledJob = Static<typeof ScheduledJob>;

/** `GET`: a bare list (the clients require it). */
export const ScheduledJobsReply = Type.Array(ScheduledJob);

export const ScheduledJobCreated = Type.Object({
  success: Type.Literal(true),
  msg: Type.String(),
  scheduled_job_id: Type.Integer(),
  scheduled_job: ScheduledJob,
});
export const ScheduledJobUpdated = Type.Object({ success: Type.Literal(true), msg: Type.String(), scheduled_job: ScheduledJob });
export const ScheduledJobDeleted = Type.Object({ success: Type.Literal(true), msg: Type.String() });

/** 422 to a create that repeats an existing job: the client asks whether to update `scheduled_job_id`. */
export const ScheduledJobExists = Type.Object({
  success: Type.Literal(false),
  error: Type.String(),
  msg: Type.String(),
  scheduled_job_id: Type.Integer({ minimum: 1, maximum: MAX_ID }),
});

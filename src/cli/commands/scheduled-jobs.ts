/**
 * Scheduled jobs: `show scheduled-jobs`, `create scheduled-job`, `update scheduled-job`, `delete scheduled-job`.
 * A job is an API request the server replays as you, hourly, daily or weekly (UTC, on the hour).
 */
import { InvalidArgumentError, type Command } from 'commander';
import { action, intArg, UsageError } from '../context.js';
import { utc } from '../output.js';
import type { Groups } from '../program.js';
import type { ScheduledJob, ScheduledJobChange } from '../../sdk/api/scheduled-jobs.js';
import { dateArg } from './machines.js';

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const FREQUENCIES = ['HOURLY', 'DAILY', 'WEEKLY'];
const METHODS = ['PUT', 'POST', 'DELETE'];

const columns = [
  { key: 'id', header: 'ID', align: 'right' as const },
  { key: 'instance_id', header: 'Instance', align: 'right' as const },
  { key: 'request_method', header: 'Method' },
  { key: 'api_endpoint', header: 'Endpoint' },
  { key: 'frequency', header: 'Frequency' },
  { key: 'day_of_the_week', header: 'Day', fmt: (v: unknown) => DAYS[Number(v)] ?? String(v) },
  { key: 'hour_of_the_day', header: 'Hour (UTC)', fmt: (v: unknown) => `${String(v).padStart(2, '0')}:00` },
  { key: 'next_run_at', header: 'Next (UTC)', fmt: utc },
  { key: 'end_time', header: 'End (UTC)', fmt: utc },
  { key: 'run_count', header: 'Runs', align: 'right' as const },
  { key: 'last_run_status', header: 'Last' },
  { key: 'last_run_msg', header: 'Last message' },
];

/** `*` (every day / every hour) or an integer in range. (Not null: Commander turns a null option value into ''.) */
const EVERY = '*';
const cronArg = (name: string, max: number) => (value: string): number | typeof EVERY => {
  if (value === EVERY) return EVERY;
  if (!/^\d{1,2}$/.test(value) || Number(value) > max) throw new InvalidArgumentError(`${name} must be 0-${max} or '*'.`);
  return Number(value);
};

const choice = (name: string, values: string[]) => (value: string): string => {
  const v = value.toUpperCase();
  if (!values.includes(v)) throw new InvalidArgumentError(`${name} must be one of ${values.join(', ')}.`);
  return v;
};

interface JobOpts {
  endpoint?: string;
  method?: string;
  body?: string;
  schedule?: string;
  day?: number | typeof EVERY;
  hour?: number | typeof EVERY;
  startDate?: string;
  endDate?: string;
  instance?: number;
}

/** The options common to create and update; `required` marks what create needs. */
function jobOptions(cmd: Command, required: boolean): Command {
  const opt = (flags: string, what: string, parse?: (v: string) => unknown) =>
    required && /--(endpoint|schedule)\b/.test(flags) ? cmd.requiredOption(flags, what, parse as never) : cmd.option(flags, what, parse as never);
  opt('--endpoint <path>', 'the API path to replay, e.g. /api/v0/instances/bid_price/12/');
  opt('--method <method>', `PUT, POST or DELETE${required ? ' (default PUT)' : ''}`, choice('--method', METHODS));
  opt('--body <json>', `the JSON object to send${required ? ' (default {})' : ''}`);
  opt('--schedule <frequency>', 'HOURLY, DAILY or WEEKLY', choice('--schedule', FREQUENCIES));
  opt('--day <day>', "WEEKLY: day of the week, 0-6 with 0 = Sunday ('*' = every day)", cronArg('--day', 6));
  opt('--hour <hour>', "DAILY and WEEKLY: hour of the day, 0-23 UTC ('*' = every hour)", cronArg('--hour', 23));
  opt('--start-date <date>', `first possible run: epoch seconds, MM/DD/YYYY or YYYY-MM-DD (UTC)${required ? '; default now' : ''}`);
  opt('--end-date <date>', `last possible run, the same forms${required ? '; default 7 days after the start' : ''}`);
  opt('--instance <id>', 'the instance the job is about: it is deleted with it', intArg('--instance'));
  return cmd;
}

function bodyOf(text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError('--body must be a JSON object, e.g. \'{"price": 0.4}\'');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new UsageError('--body must be a JSON object');
  return parsed as Record<string, unknown>;
}

/** The given options as the job's fields (absent options are left out). */
function fieldsOf(o: JobOpts): ScheduledJobChange {
  const out: ScheduledJobChange = {};
  if (o.endpoint !== undefined) out.api_endpoint = o.endpoint;
  if (o.method !== undefined) out.request_method = o.method as ScheduledJobChange['request_method'];
  if (o.body !== undefined) out.request_body = bodyOf(o.body);
  if (o.schedule !== undefined) out.frequency = o.schedule as ScheduledJobChange['frequency'];
  if (o.day !== undefined) out.day_of_the_week = o.day === EVERY ? null : o.day;
  if (o.hour !== undefined) out.hour_of_the_day = o.hour === EVERY ? null : o.hour;
  if (o.startDate !== undefined) out.start_time = dateArg('--start-date')(o.startDate);
  if (o.endDate !== undefined) out.end_time = dateArg('--end-date')(o.endDate);
  if (o.instance !== undefined) out.instance_id = o.instance;
  return out;
}

const describeJob = (j: ScheduledJob) =>
  `scheduled job ${j.id}: ${j.frequency} ${j.request_method} ${j.api_endpoint}, next run ${j.next_run_at === null ? 'none' : `${utc(j.next_run_at)} UTC`}`;

export function registerScheduledJobs(g: Groups): void {
  g.show
    .command('scheduled-jobs')
    .description('your scheduled jobs: API requests the server replays as you, with their last run')
    .addHelpText('after', '\nExample:\n  gpuplane show scheduled-jobs')
    .action(
      action(async (ctx) => {
        const rows = await ctx.client.scheduledJobs.list();
        ctx.out.print(rows, () => (rows.length ? ctx.out.table(rows as unknown as Record<string, unknown>[], columns) : 'no scheduled jobs'));
      }),
    );

  jobOptions(
    g.create
      .command('scheduled-job')
      .description('schedule an API request to be replayed as you, hourly, daily or weekly (UTC, on the hour)'),
    true,
  )
    .addHelpText('after', `
The job runs with the rights of the API key that creates it, and stops sending while that key is revoked.

Example:
  gpuplane create scheduled-job --endpoint /api/v0/instances/bid_price/12/ --body '{"price": 0.4}' --schedule DAILY --hour 3 --instance 12
  gpuplane create scheduled-job --endpoint /api/v0/instances/12/ --method DELETE --schedule WEEKLY --day 0 --hour 23 --instance 12`)
    .action(
      action(async (ctx, o: JobOpts) => {
        const f = fieldsOf(o);
        const r = await ctx.client.scheduledJobs.create({
          ...f,
          api_endpoint: f.api_endpoint!,
          frequency: f.frequency!,
          request_method: f.request_method ?? 'PUT',
          request_body: f.request_body ?? {},
        });
        ctx.out.print(r, () => describeJob(r.scheduled_job));
      }),
    );

  jobOptions(
    g.update
      .command('scheduled-job')
      .description('change a scheduled job (it then runs with the rights of the key in use)')
      .argument('<id>', 'scheduled job id', intArg('id')),
    false,
  )
    .addHelpText('after', '\nExample:\n  gpuplane update scheduled-job 3 --body \'{"price": 0.5}\' --end-date 2027-03-01')
    .action(
      action(async (ctx, id: number, o: JobOpts) => {
        const f = fieldsOf(o);
        if (Object.keys(f).length === 0) throw new UsageError('give at least one option to change');
        const r = await ctx.client.scheduledJobs.update(id, f);
        ctx.out.print(r, () => describeJob(r.scheduled_job));
      }),
    );

  g.delete
    .command('scheduled-job')
    .description('delete a scheduled job')
    .argument('<id>', 'scheduled job id', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane delete scheduled-job 3')
    .action(
      action(async (ctx, id: number) => {
        const r = await ctx.client.scheduledJobs.remove(id);
        ctx.out.print(r, () => r.msg);
      }),
    );
}

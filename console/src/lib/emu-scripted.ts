/**
 * The Emulator page's scripted failures and transitions (issue 34 items 3 and 4), without React: the forms' state as
 * the strings the inputs hold, turned into the control API's request bodies (contract §2: `POST /_emu/request-faults`,
 * `POST /_emu/events`, `PUT /_emu/transitions`), with an error per field for what the browser can tell is wrong; and
 * the lists' rows in words. The server checks everything again: what it refuses is shown in its own words.
 */
import { parseDuration } from './emulator.js';
import { utcTime } from './format.js';

/** Errors of a form, by its field's name (the key of the form object). */
export type FieldErrors<F> = Partial<Record<keyof F, string>>;
export type Built<B, F> = { body: B; errors: null } | { body: null; errors: FieldErrors<F> };

const built = <B, F>(body: B, errors: FieldErrors<F>): Built<B, F> =>
  Object.keys(errors).length ? { body: null, errors } : { body, errors: null };

/** A number typed in a field: undefined when empty, NaN when not a number. */
function num(s: string): number | undefined {
  const t = s.trim();
  return t === '' ? undefined : /^-?\d+(\.\d+)?$/.test(t) ? Number(t) : Number.NaN;
}

/** A whole number in [min, max] typed in a field, or an error in words; undefined when the field is empty. */
function int(s: string, min: number, max: number, errors: Record<string, string>, field: string, what: string): number | undefined {
  const n = num(s);
  if (n === undefined) return undefined;
  if (!Number.isInteger(n) || n < min || n > max) errors[field] = `${what} must be a whole number from ${min} to ${max}.`;
  return n;
}

/** A duration typed as `90`, `15m`, `2h`, `1h30m` (seconds), `0` = none; undefined when empty, NaN when not one. */
function seconds(s: string): number | undefined {
  const t = s.trim();
  if (t === '') return undefined;
  if (/^0+(\.0*)?[smhdw]?$/i.test(t)) return 0;
  return parseDuration(t) ?? Number.NaN;
}

/** Sets `body[key]` when there is a value: a field left empty sends nothing. */
function put<B, K extends keyof B>(body: B, key: K, value: B[K] | undefined): void {
  if (value !== undefined) body[key] = value;
}

/** The seed field the request-fault and host-event forms end with, into the body; then the body, or the errors. */
function seeded<B extends { seed?: number }, F extends { seed: string }>(body: B, f: F, errors: Record<string, string>): Built<B, F> {
  put(body, 'seed', int(f.seed, 0, Number.MAX_SAFE_INTEGER, errors, 'seed', 'The seed'));
  return built(body, errors as FieldErrors<F>);
}

const DURATION_HINT = 'a duration such as 90 (seconds), 15m, 2h or 1h30m';

/** `90 s`, `15 min`, `2 h`, `1 h 30 min`: a number of seconds as a person reads it. */
export function durationText(sec: number): string {
  if (sec < 60 || sec % 60 !== 0) return `${sec} s`;
  const h = Math.floor(sec / 3600);
  const m = (sec % 3600) / 60;
  if (sec % 86_400 === 0) return `${sec / 86_400} d`;
  return [h ? `${h} h` : '', m ? `${m} min` : ''].filter(Boolean).join(' ');
}

// ---------------------------------------------------------------------------------------------------------------
// Request faults: `POST /_emu/request-faults` (faults by API operation).

export const FAULT_METHODS = ['*', 'GET', 'POST', 'PUT', 'DELETE'] as const;
export const FAULT_STATUSES = [429, 500, 502, 503, 504] as const;
/** What a faulted request gets: an error reply, no reply at all (the connection dropped), or only a delay. */
export const FAULT_OUTCOMES = [
  { value: 'status', label: 'Error (429 or 5xx)', what: 'the API\'s error object, as Vast.ai sends it' },
  { value: 'timeout', label: 'No reply (dropped)', what: 'the connection is dropped after the delay' },
  { value: 'latency', label: 'Delay only', what: 'the normal reply, after the delay' },
] as const;
export type FaultOutcome = (typeof FAULT_OUTCOMES)[number]['value'];

/** The request-fault form, as its inputs hold it. */
export interface RequestFaultForm {
  method: (typeof FAULT_METHODS)[number];
  route: string;
  category: string;
  outcome: FaultOutcome;
  status: string;
  retryAfter: string;
  latencyMs: string;
  probability: string;
  count: string;
  seed: string;
}

export const DEFAULT_REQUEST_FAULT: RequestFaultForm = {
  method: '*', route: '', category: '', outcome: 'status', status: '429', retryAfter: '1', latencyMs: '', probability: '1', count: '', seed: '',
};

/** Body of `POST /_emu/request-faults` (contract §2, issue 34). */
export interface RequestFaultBody {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE' | '*';
  route?: string;
  category?: string;
  probability?: number;
  status?: (typeof FAULT_STATUSES)[number];
  retry_after?: number;
  latency_ms?: number;
  timeout?: true;
  count?: number;
  seed?: number;
}

/** A rule as the lists' words take it: a body, or a listed rule (whose unset fields are null). */
export interface FaultLike {
  method?: string;
  route?: string | null;
  category?: string | null;
  probability?: number;
  status?: number | null;
  retry_after?: number | null;
  latency_ms?: number | null;
  timeout?: boolean | null;
  count?: number | null;
  seed?: number | null;
}

/** A rule as `GET /_emu/request-faults` lists it: its id, and how many requests it matched and faulted. */
export interface RequestFaultRule extends FaultLike {
  id: number;
  matched?: number;
  fired: number;
}

export function buildRequestFault(f: RequestFaultForm): Built<RequestFaultBody, RequestFaultForm> {
  const errors: Record<string, string> = {};
  const body: RequestFaultBody = {};
  const route = f.route.trim();
  if (f.method !== '*') body.method = f.method;
  if (route) {
    if (route !== '*' && !route.startsWith('/')) errors.route = 'A route starts with / (as /api/v0/bundles/), or is * for every route.';
    body.route = route;
  }
  if (f.category) body.category = f.category;
  if (!body.method && !body.route && !body.category) {
    errors.route = 'Say which requests: a route (* for every one), a method or a permission category.';
  }
  const probability = num(f.probability);
  if (probability !== undefined) {
    if (!(probability >= 0 && probability <= 1)) errors.probability = 'The probability is a number from 0 to 1 (0.5: half the requests).';
    else if (probability !== 1) body.probability = probability;
  }
  const latency = int(f.latencyMs, 0, 60_000, errors, 'latencyMs', 'The delay (ms)');
  if (f.outcome === 'status') {
    const status = FAULT_STATUSES.find((s) => String(s) === f.status.trim());
    if (status === undefined) errors.status = `The status is one of ${FAULT_STATUSES.join(', ')}.`;
    else body.status = status;
    if (status === 429) {
      put(body, 'retry_after', int(f.retryAfter, 0, 86_400, errors, 'retryAfter', 'Retry-After (seconds)'));
    }
    if (latency) body.latency_ms = latency;
  } else if (f.outcome === 'timeout') {
    body.timeout = true;
    if (latency !== undefined) body.latency_ms = latency;
  } else {
    if (!latency && !errors.latencyMs) errors.latencyMs = 'Enter the delay in milliseconds (1 to 60000).';
    if (latency) body.latency_ms = latency;
  }
  put(body, 'count', int(f.count, 1, 1_000_000, errors, 'count', 'At most (times)'));
  return seeded(body, f, errors);
}

/** Which requests a rule matches, in words: `POST /api/v0/bundles/`, `any method, category instance_write`. */
export function faultMatchText(r: FaultLike): string {
  const anyMethod = !r.method || r.method === '*';
  const method = anyMethod ? 'any method' : r.method!;
  const what = r.route === '*' ? (anyMethod ? 'every request' : `${method}, every route`) : r.route ? `${method} ${r.route}` : method;
  return [what, r.category ? `category ${r.category}` : ''].filter(Boolean).join(', ');
}

/** What a faulted request gets, in words: `429, Retry-After 2 s`, `503 after 500 ms`, `no reply (dropped after 30 s)`. */
export function faultEffectText(r: FaultLike): string {
  const delay = r.latency_ms ? ` after ${r.latency_ms} ms` : '';
  if (r.timeout) return `no reply (dropped after ${r.latency_ms ? `${r.latency_ms} ms` : '30 s'})`;
  if (r.status === undefined || r.status === null) return r.latency_ms ? `${r.latency_ms} ms delay` : '429';
  return `${r.status}${r.status === 429 ? `, Retry-After ${r.retry_after ?? 1} s` : ''}${delay}`;
}

/** How often: `always`, `50% of requests`, plus `at most 3 times` and the seed when set. */
export function faultOddsText(r: FaultLike): string {
  const p = r.probability ?? 1;
  const parts = [p >= 1 ? 'always' : `${Math.round(p * 1000) / 10}% of requests`];
  if (r.count) parts.push(`at most ${r.count} ${r.count === 1 ? 'time' : 'times'}`);
  if (r.seed !== undefined && r.seed !== null) parts.push(`seed ${r.seed}`);
  return parts.join(', ');
}

// ---------------------------------------------------------------------------------------------------------------
// Host events: `POST /_emu/events` (on the virtual clock).

export const EVENT_KINDS = [
  { kind: 'outbid_wave', label: 'Outbid wave', what: 'the interruptible (bid) instances on the machines are outbid' },
  { kind: 'host_offline', label: 'Host offline', what: 'the machines go offline, and come back after the duration' },
  { kind: 'slow_pull', label: 'Slow pull', what: 'image pulls on the machines take longer for the duration' },
  { kind: 'gpu_lost', label: 'GPU lost', what: 'a GPU of each machine is lost (until the duration ends, if one is given)' },
] as const;
export type EventKind = (typeof EVENT_KINDS)[number]['kind'];

export const EVENT_TARGETS = [
  { value: 'fraction', label: 'A share of the fleet' },
  { value: 'machines', label: 'A number of machines' },
  { value: 'ids', label: 'These machine IDs' },
] as const;
export type EventTarget = (typeof EVENT_TARGETS)[number]['value'];

/** How a host_offline's machines go away (the emulator's machine faults); '' is the server's default. */
export const OFFLINE_FAULTS = [
  { value: '', label: 'Heartbeats stop (default)' },
  { value: 'offline', label: 'Disconnects (offline)' },
  { value: 'unknown', label: 'Stops reporting (unknown)' },
] as const;

/** The host-event form, as its inputs hold it. */
export interface HostEventForm {
  kind: EventKind;
  /** host_offline: the fault its machines go under ('' = the server's default, no_heartbeat). */
  fault: '' | 'offline' | 'unknown' | 'no_heartbeat';
  /** A duration from now (empty or 0: now). */
  after: string;
  target: EventTarget;
  fraction: string;
  machines: string;
  machineIds: string;
  duration: string;
  pullSeconds: string;
  gpuIndex: string;
  seed: string;
}

export const DEFAULT_HOST_EVENT: HostEventForm = {
  kind: 'outbid_wave', fault: '', after: '60', target: 'fraction', fraction: '0.5', machines: '1', machineIds: '', duration: '5m', pullSeconds: '300', gpuIndex: '', seed: '',
};

/** Body of `POST /_emu/events` (contract §2, issue 34). */
export interface HostEventBody {
  kind: EventKind;
  after?: number;
  machine_ids?: number[];
  fraction?: number;
  machines?: number;
  duration?: number;
  pull_seconds?: number;
  gpu_index?: number;
  fault?: 'no_heartbeat' | 'offline' | 'unknown';
  seed?: number;
}

export type EventState = 'pending' | 'active' | 'done';

/** An event as `GET /_emu/events` lists it (unset fields are null). */
export interface HostEvent {
  id: number;
  kind: EventKind | string;
  at: number;
  ends_at?: number | null;
  machine_ids: number[];
  duration?: number | null;
  pull_seconds?: number | null;
  gpu_index?: number | null;
  fault?: string | null;
  seed?: number | null;
  state: EventState | string;
  /** The instances it acted on (the bid instances a wave outbid). */
  instance_ids?: number[];
}

/** Whether a kind takes a duration, and whether it must have one. */
export function eventDuration(kind: EventKind): 'none' | 'required' | 'optional' {
  return kind === 'outbid_wave' ? 'none' : kind === 'gpu_lost' ? 'optional' : 'required';
}

export function buildHostEvent(f: HostEventForm): Built<HostEventBody, HostEventForm> {
  const errors: Record<string, string> = {};
  const body: HostEventBody = { kind: f.kind };
  const after = seconds(f.after);
  if (after !== undefined && Number.isNaN(after)) errors.after = `Enter ${DURATION_HINT}, or 0 for now.`;
  else if (after) body.after = after;
  if (f.target === 'ids') {
    const parts = f.machineIds.split(/[\s,]+/).filter(Boolean);
    const ids = parts.map(Number);
    if (parts.length === 0 || ids.some((n) => !Number.isInteger(n) || n < 1)) errors.machineIds = 'Enter machine IDs separated by commas, e.g. 3, 7.';
    else body.machine_ids = [...new Set(ids)];
  } else if (f.target === 'machines') {
    const n = int(f.machines, 1, 100_000, errors, 'machines', 'The number of machines');
    if (n === undefined) errors.machines = 'Enter how many machines.';
    else body.machines = n;
  } else {
    const p = num(f.fraction);
    if (p === undefined || !(p > 0 && p <= 1)) errors.fraction = 'The share is a number above 0, at most 1 (0.25: a quarter of the machines).';
    else body.fraction = p;
  }
  const needs = eventDuration(f.kind);
  if (needs !== 'none') {
    const d = seconds(f.duration);
    if (d === undefined || d === 0) {
      if (needs === 'required') errors.duration = `Enter how long it lasts: ${DURATION_HINT}.`;
    } else if (Number.isNaN(d)) errors.duration = `Enter ${DURATION_HINT}.`;
    else body.duration = d;
  }
  if (f.kind === 'slow_pull') {
    const p = int(f.pullSeconds, 1, 86_400, errors, 'pullSeconds', 'A pull (seconds)');
    if (p === undefined) errors.pullSeconds = 'Enter how many seconds a pull takes meanwhile.';
    else body.pull_seconds = p;
  }
  if (f.kind === 'host_offline' && f.fault) body.fault = f.fault;
  if (f.kind === 'gpu_lost') put(body, 'gpu_index', int(f.gpuIndex, 0, 63, errors, 'gpuIndex', 'The GPU index'));
  return seeded(body, f, errors);
}

export function eventKindLabel(kind: string): string {
  return EVENT_KINDS.find((k) => k.kind === kind)?.label ?? kind;
}

/** What an event does, in words beyond its kind: `for 5 min`, `pulls take 300 s, for 10 min`, `GPU 1, stays lost`. */
export function eventDetailText(e: Pick<HostEvent, 'kind' | 'duration' | 'pull_seconds' | 'gpu_index' | 'fault' | 'instance_ids'>): string {
  const parts: string[] = [];
  if (e.kind === 'outbid_wave' && e.instance_ids && e.instance_ids.length > 0) {
    parts.push(`outbid instance${e.instance_ids.length === 1 ? '' : 's'} ${e.instance_ids.join(', ')}`);
  }
  if (e.kind === 'host_offline' && e.fault) parts.push(e.fault.replace('_', ' '));
  if (e.kind === 'slow_pull' && e.pull_seconds) parts.push(`pulls take ${e.pull_seconds} s`);
  if (e.kind === 'gpu_lost' && e.gpu_index !== undefined && e.gpu_index !== null) parts.push(`GPU ${e.gpu_index}`);
  if (e.duration) parts.push(`for ${durationText(e.duration)}`);
  else if (e.kind === 'gpu_lost') parts.push('stays lost');
  return parts.join(', ') || '—';
}

export function eventMachinesText(ids: readonly number[] | undefined): string {
  if (!ids || ids.length === 0) return 'none';
  return ids.length > 8 ? `${ids.slice(0, 8).join(', ')} and ${ids.length - 8} more` : ids.join(', ');
}

/** When an event happens, against the emulator's clock: `2026-01-01 10:00 UTC (in 60 s)`. */
export function eventWhenText(at: number, now: number | undefined): string {
  if (now === undefined || at === now) return utcTime(at);
  return `${utcTime(at)} (${at > now ? `in ${durationText(Math.round(at - now))}` : `${durationText(Math.round(now - at))} ago`})`;
}

/** A state's badge class: words carry it, the colour only helps. */
export function eventStateBadge(state: string): 'ok' | 'warn' | 'idle' {
  return state === 'active' ? 'warn' : state === 'pending' ? 'ok' : 'idle';
}

/** Whether an event can still be cancelled (pending) or ended (active). */
export function eventCancellable(state: string): boolean {
  return state === 'pending' || state === 'active';
}

// ---------------------------------------------------------------------------------------------------------------
// Transitions: `PUT /_emu/transitions` (moto's state manager, for the simulated hosts' instances).

export const TRANSITION_MODES = [
  { mode: 'immediate', label: 'Immediate', what: 'created instances are running at once' },
  { mode: 'delay', label: 'After a delay', what: 'running a set number of virtual seconds after the change' },
  { mode: 'manual', label: 'Manual', what: 'stays loading until you advance it' },
  { mode: 'default', label: 'Default', what: "the emulator's seeded boot time" },
] as const;
export type TransitionMode = (typeof TRANSITION_MODES)[number]['mode'];

export interface TransitionForm {
  scope: 'kind' | 'instance';
  instanceId: string;
  mode: TransitionMode;
  seconds: string;
}

export const DEFAULT_TRANSITION: TransitionForm = { scope: 'kind', instanceId: '', mode: 'manual', seconds: '30' };

/** Body of `PUT /_emu/transitions` (contract §2, issue 34). */
export interface TransitionBody {
  kind?: 'instance';
  instance_id?: number;
  mode: TransitionMode;
  seconds?: number;
}

/** A slow-pull window a host event opened, as `GET /_emu/transitions` lists it. */
export interface SlowPullWindow {
  ref: string;
  machine_id: number;
  pull_seconds: number;
  until: number | null;
}

/** The seeded boot time in words: `30 s`, `30 to 90 s`. */
export function bootSecondsText(b: { min: number; max: number } | undefined): string {
  if (!b) return 'the seeded boot time';
  return b.min === b.max ? `${durationText(b.min)} to boot` : `${b.min} to ${b.max} s to boot`;
}

/** A rule as `GET /_emu/transitions` lists it. */
export interface TransitionRule {
  kind?: string | null;
  instance_id?: number | null;
  mode: TransitionMode | string;
  seconds?: number | null;
}

export function buildTransition(f: TransitionForm): Built<TransitionBody, TransitionForm> {
  const errors: Record<string, string> = {};
  const body: TransitionBody = { kind: 'instance', mode: f.mode };
  if (f.scope === 'instance') {
    const id = int(f.instanceId, 1, Number.MAX_SAFE_INTEGER, errors, 'instanceId', 'The instance ID');
    if (id === undefined) errors.instanceId = 'Enter the instance ID.';
    else body.instance_id = id;
  }
  if (f.mode === 'delay') {
    const s = seconds(f.seconds);
    if (s === undefined || Number.isNaN(s)) errors.seconds = `Enter ${DURATION_HINT}.`;
    else body.seconds = s;
  }
  return built(body, errors);
}

/** A rule's scope in words: `every instance` or `instance 42`. */
export function transitionScopeText(r: TransitionRule): string {
  return r.instance_id ? `instance ${r.instance_id}` : 'every instance';
}

/** A rule's mode in words: `manual (advance it)`, `after 30 s`, `immediate`, `default`. */
export function transitionModeText(r: TransitionRule): string {
  if (r.mode === 'delay') return r.seconds !== undefined && r.seconds !== null ? `after ${durationText(r.seconds)}` : 'after a delay';
  if (r.mode === 'manual') return 'manual (advance it)';
  return TRANSITION_MODES.find((m) => m.mode === r.mode)?.label.toLowerCase() ?? String(r.mode);
}

/** The instance ID typed in the advance form, or null when it is not one. */
export function parseInstanceId(s: string): number | null {
  const n = num(s);
  return n !== undefined && Number.isInteger(n) && n >= 1 ? n : null;
}

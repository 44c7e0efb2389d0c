/**
 * Issue 34 item 5 (recorder): `gpuplane emu replay FILE` sends a recording's calls, in order, to an emulator and
 * compares each reply with the recorded one. Run by the CLI (plain fetch, no server code: it imports only the
 * recording's format and placeholder).
 *
 * Secrets: the recording holds placeholders (`<secret:N>`), and the replay gives each a value:
 * - the first credential the recording presents (its first `Authorization`, and the first after each server start
 *   that appended to it) is the replay's API key (`--api-key`);
 * - a secret a recorded reply revealed (a key created, a session key) is what the replay's reply has at the same
 *   place (a placeholder inside a longer string, e.g. a log URL's token, is read from the same string);
 * - any other (a password the client chose, a secret the recorder saw before it restarted) gets a stand-in, the same
 *   wherever it recurs, so a sign-up and a later login with that password still agree.
 *
 * Differences are reported by JSON path; secrets never appear in the report (a differing secret reads `<secret:N>`
 * against "a different secret"). Answers repeat exactly on an emulator started like the recorded one: a virtual clock
 * from the same start, the same GPUPLANE_SEED and GPUPLANE_SIM_MACHINES, nothing done to it before. With a real clock
 * times differ: the fields named as times (VOLATILE_TIME_FIELDS) are then not compared.
 */
import { isHeader, RECORDING_FORMAT, RECORDING_VERSION, type RecordedCall, type RecordingHeader, type RecordingLine } from './recorder-format.js';

/** Fields that hold a time (or a duration measured on the clock): not compared when the recorded clock was real. */
export const VOLATILE_TIME_FIELDS: ReadonlySet<string> = new Set([
  'at', 'now', 'start', 'end', 'timestamp', 'created_at', 'updated_at', 'started_at', 'ended_at', 'finished_at', 'expires_at',
  'sent_at', 'last_used', 'last_used_at', 'loaded_at', 'joined_at', 'start_date', 'end_date', 'start_time', 'end_time',
  'recent_create_date', 'last_update', 'next_run_at', 'last_run_at', 'email_verified_at', 'paid_on', 'valid_until',
  'first_seen', 'locked_until', 'gpu_sampled_at', 'last_client_heartbeat', 'code_expires_at', 'duration', 'sdate', 'edate',
]);

export interface Difference {
  seq: number;
  method: string;
  path: string;
  /** `status`, or a JSON path into the reply (`$.instances[0].actual_status`). */
  where: string;
  recorded: string;
  got: string;
}

export interface ReplayReport {
  calls: number;
  /** Calls with at least one difference. */
  differing: number;
  differences: Difference[];
  /** Whether time fields were left out of the comparison (a recording made with a real clock, or `ignoreTimes`). */
  times_ignored: boolean;
  /** Fields left out of the comparison by name. */
  ignored_fields: string[];
  /** How the recorded emulator ran (its header), for the report's advice. */
  recorded: Omit<RecordingHeader, 'format' | 'version'> | null;
}

export interface ReplayOptions {
  url: string;
  apiKey: string | undefined;
  fetch?: (input: string, init?: RequestInit) => Promise<Response>;
  /** Field names not compared (anywhere in a reply). */
  ignore?: readonly string[];
  /** Leave time fields out even when the recording's clock was virtual. */
  ignoreTimes?: boolean;
  /**
   * Where each server start's calls begin (parseRecording): a file appended to by several starts numbers the same key
   * anew after each (the recorder keeps no secret), so each start's first credential is the replay's key again.
   */
  sessionStarts?: ReadonlySet<number>;
}

export class RecordingError extends Error {}

/** A recording file's text → its header and calls (lines of other recordings' formats are refused). */
export function parseRecording(text: string): { header: RecordingHeader | null; calls: RecordedCall[]; sessionStarts: Set<number> } {
  let header: RecordingHeader | null = null;
  const calls: RecordedCall[] = [];
  /** Indexes (in `calls`) of the first call after each header: where a server start's calls begin. */
  const sessionStarts = new Set<number>();
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const t = lines[i].trim();
    if (t === '') continue;
    let v: RecordingLine;
    try {
      v = JSON.parse(t) as RecordingLine;
    } catch {
      throw new RecordingError(`line ${i + 1}: not JSON`);
    }
    if (v === null || typeof v !== 'object') throw new RecordingError(`line ${i + 1}: not a recorded call`);
    if (isHeader(v)) {
      if (v.version !== RECORDING_VERSION) throw new RecordingError(`line ${i + 1}: recording version ${String(v.version)}, this gpuplane reads version ${RECORDING_VERSION}`);
      header ??= v;
      sessionStarts.add(calls.length);
      continue;
    }
    const c = v as RecordedCall;
    if (typeof c.method !== 'string' || typeof c.path !== 'string' || typeof c.status !== 'number' || !c.path.startsWith('/')) {
      throw new RecordingError(`line ${i + 1}: not a recorded call of ${RECORDING_FORMAT} (method, path and status expected)`);
    }
    calls.push(c);
  }
  return { header, calls, sessionStarts };
}

const PLACEHOLDER_ONLY = /^<secret:(\d+)>$/;
const PLACEHOLDERS = /<secret:(\d+)>/g;
/** The server's own URL in a reply (a log's result_url): the recorded and the replayed servers listen on other ports. */
const LOCAL_ORIGIN = /https?:\/\/(?:127\.0\.0\.1|localhost|\[::1\]):\d+/g;
const MAX_SHOWN = 160;

/** Replays `calls` in order; never throws for a reply that differs (that is the report), only when it cannot send. */
export async function replay(calls: readonly RecordedCall[], header: RecordingHeader | null, options: ReplayOptions): Promise<ReplayReport> {
  const fetchFn = options.fetch ?? ((input: string, init?: RequestInit) => globalThis.fetch(input, init));
  const base = options.url.replace(/\/+$/, '');
  const values = new Map<number, string>();
  let credentialMapped = false;
  const ignoreTimes = options.ignoreTimes === true || header?.clock === 'real';
  const ignored = new Set([...(options.ignore ?? []), ...(ignoreTimes ? VOLATILE_TIME_FIELDS : [])]);
  const differences: Difference[] = [];
  let differing = 0;

  const valueOf = (n: number): string => {
    let v = values.get(n);
    if (v === undefined) {
      // A stand-in: a password's rules (8+ characters) and a token's pattern ([A-Za-z0-9_-]{16,}) accept it.
      v = `Replay_${String(n).padStart(4, '0')}_stand-in`;
      values.set(n, v);
    }
    return v;
  };
  const fill = (s: string, encode = false): string => s.replace(PLACEHOLDERS, (_m, n: string) => (encode ? encodeURIComponent(valueOf(Number(n))) : valueOf(Number(n))));
  const fillJson = (v: unknown): unknown => {
    if (typeof v === 'string') return fill(v);
    if (Array.isArray(v)) return v.map(fillJson);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fillJson(x)]));
    return v;
  };

  for (const [index, call] of calls.entries()) {
    if (options.sessionStarts?.has(index)) credentialMapped = false;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(call.request?.headers ?? {})) {
      if (name === 'authorization' && !credentialMapped) {
        const m = /^(\S+)\s+<secret:(\d+)>$/.exec(value);
        if (m && !values.has(Number(m[2])) && options.apiKey !== undefined) values.set(Number(m[2]), options.apiKey);
        credentialMapped = true;
      }
      headers[name] = fill(value);
    }
    const body = call.request?.body;
    const init: RequestInit = { method: call.method, headers };
    if (body !== null && body !== undefined) {
      init.body = JSON.stringify(fillJson(body));
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetchFn(base + fill(call.path, true), init);
    const text = await res.text();
    const diffs: Omit<Difference, 'seq' | 'method' | 'path'>[] = [];
    if (res.status !== call.status) diffs.push({ where: 'status', recorded: String(call.status), got: String(res.status) });
    if (call.reply_kind === 'json') {
      let got: unknown;
      try {
        got = JSON.parse(text);
      } catch {
        diffs.push({ where: '$', recorded: 'a JSON reply', got: `a text reply: ${shown(text)}` });
      }
      if (got !== undefined) compare(call.reply, got, '$', diffs);
    } else if (call.reply_kind === 'text' && typeof call.reply === 'string') {
      compare(call.reply, text, '$', diffs);
    }
    for (const [h, v] of Object.entries(call.reply_headers ?? {})) {
      const g = res.headers.get(h);
      if (g === null) diffs.push({ where: `header ${h}`, recorded: v, got: '(absent)' });
      else compare(v, g, `header ${h}`, diffs);
    }
    if (diffs.length) differing++;
    for (const d of diffs) differences.push({ seq: call.seq, method: call.method, path: call.path, ...d });
  }

  /** Compares a recorded value with the replay's; binds the placeholders a reply revealed. */
  function compare(rec: unknown, got: unknown, where: string, out: Omit<Difference, 'seq' | 'method' | 'path'>[]): void {
    if (typeof rec === 'string' && rec.includes('<secret:')) {
      if (typeof got !== 'string') return void out.push({ where, recorded: rec, got: shownValue(got) });
      const only = PLACEHOLDER_ONLY.exec(rec);
      if (only) {
        const n = Number(only[1]);
        if (!values.has(n)) values.set(n, got);
        else if (values.get(n) !== got) out.push({ where, recorded: rec, got: 'a different secret' });
        return;
      }
      // A placeholder inside a string: the rest must match, and each placeholder's value is read from its place.
      const names: number[] = [];
      const pattern = normalize(rec).split(PLACEHOLDERS).map((part, i) => {
        if (i % 2 === 1) {
          names.push(Number(part));
          return '(.+?)';
        }
        return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      }).join('');
      const m = new RegExp(`^${pattern}$`, 's').exec(normalize(got));
      if (!m) return void out.push({ where, recorded: shown(rec), got: 'a different value (with secrets in it: not shown)' });
      names.forEach((n, i) => {
        const v = decodeURIComponentSafe(m[i + 1]);
        if (!values.has(n)) values.set(n, v);
        else if (values.get(n) !== v) out.push({ where, recorded: shown(rec), got: `a different secret in place of <secret:${n}>` });
      });
      return;
    }
    if (Array.isArray(rec)) {
      if (!Array.isArray(got)) return void out.push({ where, recorded: shownValue(rec), got: shownValue(got) });
      if (rec.length !== got.length) out.push({ where: `${where}.length`, recorded: String(rec.length), got: String(got.length) });
      for (let i = 0; i < Math.min(rec.length, got.length); i++) compare(rec[i], got[i], `${where}[${i}]`, out);
      return;
    }
    if (rec !== null && typeof rec === 'object') {
      if (got === null || typeof got !== 'object' || Array.isArray(got)) return void out.push({ where, recorded: shownValue(rec), got: shownValue(got) });
      const r = rec as Record<string, unknown>;
      const g = got as Record<string, unknown>;
      for (const k of new Set([...Object.keys(r), ...Object.keys(g)])) {
        if (ignored.has(k)) continue;
        const at = /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? `${where}.${k}` : `${where}[${JSON.stringify(k)}]`;
        if (!(k in g)) out.push({ where: at, recorded: shownValue(r[k]), got: '(absent)' });
        else if (!(k in r)) out.push({ where: at, recorded: '(absent)', got: shownValue(g[k]) });
        else compare(r[k], g[k], at, out);
      }
      return;
    }
    if (typeof rec === 'string' && typeof got === 'string') {
      if (normalize(rec) !== normalize(got)) out.push({ where, recorded: shown(JSON.stringify(rec)), got: shownValue(got) });
      return;
    }
    if (!Object.is(rec, got) && !(rec === 0 && got === 0)) out.push({ where, recorded: shownValue(rec), got: shownValue(got) });
  }

  /** A value of the replay's reply as the report shows it: a value the replay knows as a secret reads as its placeholder. */
  function shownValue(v: unknown): string {
    if (v === undefined) return '(absent)';
    let s = JSON.stringify(v);
    for (const [n, secret] of values) if (secret.length >= 6) s = s.split(JSON.stringify(secret).slice(1, -1)).join(`<secret:${n}>`);
    return shown(s);
  }

  return {
    calls: calls.length,
    differing,
    differences,
    times_ignored: ignoreTimes,
    ignored_fields: [...(options.ignore ?? [])],
    recorded: header ? { started_at: header.started_at, clock: header.clock, seed: header.seed, sim_machines: header.sim_machines } : null,
  };
}

function normalize(s: string): string {
  return s.replace(LOCAL_ORIGIN, '<server>');
}

function shown(s: string): string {
  return s.length > MAX_SHOWN ? `${s.slice(0, MAX_SHOWN)}…` : s;
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The report as text: a summary line, then one line per difference. */
export function reportText(r: ReplayReport): string {
  const lines = [`${r.calls} calls replayed, ${r.differing} differ${r.differing === 1 ? 's' : ''}`];
  if (r.times_ignored) lines.push('(times not compared: the recording was made with a real clock, or --ignore-times)');
  for (const d of r.differences) lines.push(`#${d.seq} ${d.method} ${d.path}: ${d.where}: recorded ${d.recorded}, got ${d.got}`);
  if (r.differing > 0 && r.recorded) {
    lines.push(`note: answers repeat exactly on a fresh emulator started as the recorded one was: --clock ${r.recorded.clock} --clock-start ${Math.floor(r.recorded.started_at)} --seed ${r.recorded.seed} --sim-machines ${r.recorded.sim_machines}`);
  }
  return lines.join('\n');
}

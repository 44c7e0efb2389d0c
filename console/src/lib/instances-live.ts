/**
 * The live instance list (no React; tested in test/console-instances-live.test.ts): the list from
 * `GET /api/v0/instances/`, kept current by the server's instance events (`GET /api/v0/instances/events/`,
 * server-sent events; no polling), each instance's status timeline built from those events.
 */
export interface InstanceRow {
  id: number;
  actual_status: string | null;
  intended_status?: unknown;
  status_msg?: unknown;
  [k: string]: unknown;
}

export interface StatusEvent {
  id: number;
  actual_status: string | null;
  intended_status: string | null;
  status_msg: string | null;
  at: number;
}

export interface TimelineEntry {
  status: string;
  at: number;
  msg: string | null;
}

export interface LiveState {
  rows: Map<number, InstanceRow>;
  timelines: Map<number, TimelineEntry[]>;
  /** An event named an instance the list does not have (just rented elsewhere): the list should be read again. */
  stale: boolean;
}

export function initialState(list: InstanceRow[], prev?: LiveState): LiveState {
  const rows = new Map(list.map((r) => [r.id, r]));
  const timelines = new Map<number, TimelineEntry[]>();
  for (const r of list) {
    const kept = prev?.timelines.get(r.id);
    timelines.set(r.id, kept ?? (r.actual_status ? [{ status: r.actual_status, at: Number(r.start_date ?? 0), msg: (r.status_msg as string | null) ?? null }] : []));
  }
  return { rows, timelines, stale: false };
}

/** Applies one event; returns a new state (React compares by identity). Events for unknown ids mark it stale. */
export function applyEvent(s: LiveState, e: StatusEvent): LiveState {
  const row = s.rows.get(e.id);
  if (!row) return { ...s, stale: true };
  const rows = new Map(s.rows);
  rows.set(e.id, { ...row, actual_status: e.actual_status, intended_status: e.intended_status, status_msg: e.status_msg });
  const timelines = new Map(s.timelines);
  const tl = timelines.get(e.id) ?? [];
  const last = tl.at(-1);
  const status = e.actual_status ?? PROVISIONING;
  if (!last || last.status !== status || last.msg !== e.status_msg) timelines.set(e.id, [...tl, { status, at: e.at, msg: e.status_msg }]);
  return { rows, timelines, stale: s.stale };
}

/**
 * An instance's timeline from its history (`GET /api/v0/instances/{id}/history/`): one entry per change, in order,
 * with any live event newer than the history kept after it.
 */
export function withHistory(s: LiveState, id: number, history: StatusEvent[]): LiveState {
  let tl: TimelineEntry[] = [];
  for (const e of history) {
    const last = tl.at(-1);
    const status = e.actual_status ?? PROVISIONING;
    if (!last || last.status !== status || last.msg !== e.status_msg) tl = [...tl, { status, at: e.at, msg: e.status_msg }];
  }
  const end = history.at(-1)?.at ?? -Infinity;
  const newer = (s.timelines.get(id) ?? []).filter((t) => t.at > end && t.status !== tl.at(-1)?.status);
  const timelines = new Map(s.timelines);
  timelines.set(id, [...tl, ...newer]);
  return { ...s, timelines };
}

/** A fresh copy of one instance (its SSH address and ports appear once it runs); a vanished one leaves the list. */
export function replaceRow(s: LiveState, id: number, row: InstanceRow | null): LiveState {
  const rows = new Map(s.rows);
  if (row) rows.set(id, { ...rows.get(id), ...row });
  else rows.delete(id);
  return { ...s, rows };
}

/** Rows in a stable order: newest first. */
export function sortedRows(s: LiveState): InstanceRow[] {
  return [...s.rows.values()].sort((a, b) => b.id - a.id);
}

/** The rows a scrolled window shows: a few beyond each edge, so a fast scroll never shows blank space. */
export function visibleRange(scrollTop: number, viewport: number, rowHeight: number, total: number, overscan = 8): { start: number; end: number } {
  const start = Math.max(0, Math.floor(scrollTop / rowHeight) - overscan);
  const end = Math.min(total, Math.ceil((scrollTop + viewport) / rowHeight) + overscan);
  return { start, end };
}

/**
 * The word for a state: the spec's `actual_status` null is "Instance being provisioned" (spec: States and
 * transitions), so it reads `provisioning`, never the raw `none` (issue 29 item 9).
 */
export const PROVISIONING = 'provisioning';

/** A status as words and a kind for its badge; the word is always shown (colour is never the only signal). */
export function statusBadge(status: string | null | undefined): { text: string; kind: 'ok' | 'warn' | 'bad' | 'idle' } {
  const s = status ?? PROVISIONING;
  if (s === PROVISIONING) return { text: PROVISIONING, kind: 'warn' };
  if (s === 'running') return { text: 'running', kind: 'ok' };
  if (s === 'loading' || s === 'scheduling' || s === 'created') return { text: s, kind: 'warn' };
  if (s === 'exited' || s === 'unknown' || s === 'offline') return { text: s, kind: 'bad' };
  return { text: s, kind: 'idle' };
}

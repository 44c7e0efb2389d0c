/**
 * Issue 34 (state): how a database value is written in a state document and read back, the same on SQLite and
 * PostgreSQL (integers and doubles as JSON numbers, booleans are 0/1 integers in this schema, JSON is text).
 *
 * Two kinds of value need more than JSON:
 * - A value sealed with this server's secret key (platform/crypto.ts SecretBox) opens with no other key, and a fresh
 *   emulator has a key of its own. A document holds the opened value, `{"$sealed": plain}`, and a load seals it again
 *   with the loading server's key. A sealed value inside a JSON text column (a `kv` row's JSON) makes the column
 *   `{"$json": value}` with the same markers inside.
 * - Doubles JSON cannot write (Infinity, NaN): `{"$num": "Infinity"}`.
 */
import { ApiError } from '../../platform/errors.js';
import type { ColumnInfo } from './emu-state-store.js';

/** `v1.<iv>.<tag>.<ciphertext>`, base64url (SecretBox.seal). Only a value that also opens is taken as sealed. */
const SEALED = /^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]*$/;

export interface Sealer {
  seal(plain: string): string;
  open(sealed: string): string | null;
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** A database value as the document writes it. */
export function encodeValue(v: unknown, box: Sealer): Json {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') return Number.isFinite(v) ? v : { $num: String(v) };
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v !== 'string') return String(v);
  const opened = SEALED.test(v) ? box.open(v) : null;
  if (opened !== null) return { $sealed: opened };
  if ((v.startsWith('{') || v.startsWith('[')) && v.includes('v1.')) {
    let parsed: Json;
    try {
      parsed = JSON.parse(v) as Json;
    } catch {
      return v;
    }
    const walked = openNested(parsed, box);
    if (walked.changed) return { $json: walked.value };
  }
  return v;
}

function openNested(v: Json, box: Sealer): { value: Json; changed: boolean } {
  if (typeof v === 'string') {
    const opened = SEALED.test(v) ? box.open(v) : null;
    return opened === null ? { value: v, changed: false } : { value: { $sealed: opened }, changed: true };
  }
  if (Array.isArray(v)) {
    const parts = v.map((x) => openNested(x, box));
    return { value: parts.map((p) => p.value), changed: parts.some((p) => p.changed) };
  }
  if (v && typeof v === 'object') {
    let changed = false;
    const out: Record<string, Json> = {};
    for (const [k, x] of Object.entries(v)) {
      const p = openNested(x, box);
      out[k] = p.value;
      changed ||= p.changed;
    }
    return { value: out, changed };
  }
  return { value: v, changed: false };
}

function sealNested(v: Json, box: Sealer): Json {
  if (Array.isArray(v)) return v.map((x) => sealNested(x, box));
  if (v && typeof v === 'object') {
    const keys = Object.keys(v);
    if (keys.length === 1 && keys[0] === '$sealed' && typeof v.$sealed === 'string') return box.seal(v.$sealed);
    return Object.fromEntries(keys.map((k) => [k, sealNested(v[k], box)]));
  }
  return v;
}

/**
 * A document's value for `column`, as the database takes it; `at` names it in a refusal (e.g.
 * `body.rows.users[3].credit_micro`).
 */
export function decodeValue(v: unknown, column: ColumnInfo, box: Sealer, at: string): unknown {
  if (v === null) {
    if (column.notNull) throw new ApiError('bad_request', `${at}: must not be null`);
    return null;
  }
  if (typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o);
    if (keys.length === 1 && typeof o.$sealed === 'string' && column.kind !== 'integer' && column.kind !== 'number') return box.seal(o.$sealed);
    if (keys.length === 1 && '$json' in o && column.kind !== 'integer' && column.kind !== 'number') return JSON.stringify(sealNested(o.$json as Json, box));
    if (keys.length === 1 && (o.$num === 'Infinity' || o.$num === '-Infinity' || o.$num === 'NaN') && column.kind === 'number') return Number(o.$num);
    throw new ApiError('bad_request', `${at}: an object is not a value (only {"$sealed": …}, {"$json": …} or {"$num": …})`);
  }
  switch (column.kind) {
    case 'integer':
      if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new ApiError('bad_request', `${at}: must be an integer`);
      return v;
    case 'number':
      if (typeof v !== 'number') throw new ApiError('bad_request', `${at}: must be a number`);
      return v;
    case 'text':
      if (typeof v !== 'string') throw new ApiError('bad_request', `${at}: must be a string`);
      return v;
    default:
      if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') throw new ApiError('bad_request', `${at}: must be a string or a number`);
      return v;
  }
}

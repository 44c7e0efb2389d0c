import { sha256Hex } from '../platform/crypto.js';

/** Length of a hash_id in hex characters (128 bits, the length the vastai client's examples show). */
export const HASH_ID_HEX_LENGTH = 32;

/** JSON with object keys sorted at every depth, so equal content always serialises to equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * The content-derived `hash_id` (spec: "changes after every edit"): SHA-256 over the canonical content plus the
 * template's id and edit version. The id keeps two templates with identical content apart; the version makes every
 * edit, even one back to earlier content or one that only changes the password, yield a new hash_id. The registry
 * password is deliberately left out: the hash_id of a public template is public, and a hash over the password would
 * let anyone test guesses against it offline.
 */
export function templateHashId(id: number, version: number, content: object): string {
  return sha256Hex(canonicalJson({ id, version, content })).slice(0, HASH_ID_HEX_LENGTH);
}

/**
 * Bounds on what a filter body may be and on how much of it an error message repeats (issue 29 item 21): 5,000
 * levels of arrays in `gpu_name.eq` made `JSON.stringify` overflow the stack inside the error message (a 500), and
 * 4,000 levels came back as 36 KB of brackets in the 400. The depth is checked first, before any other work on the
 * body, and an echoed value is cut to a short, named length by a serializer that stops when it has written enough.
 */
import { ApiError } from '../platform/errors.js';

/**
 * Deepest nesting of arrays and objects a filter body may have. A filter nests three containers at most: the body,
 * a field's operators and an `in` list (`{"gpu_name": {"in": ["A100"]}}`), or the body, `order` and a pair; one level
 * is spare for a wrapper such as `{"q": …}`.
 */
export const MAX_FILTER_DEPTH = 4;

/** Longest echo of a given value in an error message (characters); a longer one ends in `…`. */
export const MAX_ECHO_CHARS = 64;

/**
 * Throws a 400 when `value` nests arrays or objects deeper than `max`. Iterative (an explicit stack), so no input can
 * exhaust the call stack here, and it stops at the first container too deep.
 */
export function checkDepth(value: unknown, where: string, max = MAX_FILTER_DEPTH): void {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth + 1 > max) {
      throw new ApiError('bad_request', `${where}: nested more than ${max} levels deep (a filter is {"field": {"op": value}}, a list in in/notin)`);
    }
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
}

/**
 * A value as JSON for an error message, at most `max` characters (then `…`). It writes only as much as fits, so its
 * work is bounded by `max` whatever the size or depth of the value; a value that cannot be JSON (a function, a
 * bigint) is written as its type.
 */
export function echo(value: unknown, max = MAX_ECHO_CHARS): string {
  let out = '';
  let cut = false;
  const full = () => cut;
  const write = (s: string) => {
    if (cut) return;
    if (s.length > max - out.length) {
      out += s.slice(0, max - out.length);
      cut = true;
    } else out += s;
  };
  const visit = (v: unknown): void => {
    if (full()) return;
    if (v === null || typeof v === 'boolean') return write(String(v));
    if (typeof v === 'number') return write(Number.isFinite(v) ? String(v) : 'null');
    // A long string is cut before it is quoted: JSON.stringify of a megabyte only to keep 64 characters of it.
    if (typeof v === 'string') return write(JSON.stringify(v.length > max ? v.slice(0, max) : v));
    if (Array.isArray(v)) {
      write('[');
      for (let i = 0; i < v.length && !full(); i++) {
        if (i) write(',');
        visit(v[i]);
      }
      return write(']');
    }
    if (typeof v === 'object') {
      write('{');
      let first = true;
      for (const k in v) {
        if (full()) break;
        if (!Object.hasOwn(v, k)) continue;
        if (!first) write(',');
        first = false;
        write(`${JSON.stringify(k.length > max ? k.slice(0, max) : k)}:`);
        visit((v as Record<string, unknown>)[k]);
      }
      return write('}');
    }
    write(typeof v);
  };
  visit(value);
  return cut ? `${out}…` : out;
}

/** A name the caller gave (a field, an operator), cut to MAX_ECHO_CHARS for an error message. */
export function shown(name: string, max = MAX_ECHO_CHARS): string {
  return name.length > max ? `${name.slice(0, max)}…` : name;
}

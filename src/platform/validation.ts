/**
 * Request validation: Ajv without its own type coercion, behind a strict coercion of ours, and a guard on body keys
 * that name owner or system columns. Every route's params, querystring, body and headers go through it (the
 * validator compiler in lazy-schemas.ts wraps each compiled schema), so no route can opt out by accident.
 *
 * Why not Ajv's `coerceTypes`: it reads strings with `Number()` and casts every JSON type into every other, so
 * `{"template_id": true}` named template 1, `/apikeys/0x10/` named key 16, `" 1"`, `"1e1"` and `null` became numbers,
 * and `{"endpoint_name": 123}` was stored as "123" (issue 11). The rules here, for every part of a request:
 * - integer: a JSON integer, or a string of decimal digits with an optional leading minus: `12`, `-1`. Not hex, not
 *   an exponent, not `+1`, not `1.0`, not ` 1`, not `012`, not `""`, not a boolean. An id is such an integer in range
 *   (`Id()` in schemas.ts: 1 to 2^31-1). A JSON number with a zero fraction (`1.0`) is the integer 1: JSON cannot
 *   tell them apart once parsed.
 * - number: a JSON number, or a string in JSON's number grammar (`0.99`, `8.0`, `-2`, `1e-05`): what the vastai client
 *   sends for floats in query strings and some bodies (Python's `str(float)`).
 * - string: a string only. A number or a boolean for a string field is a 400, never its text.
 * - boolean: a JSON boolean; in a query string, path or header (where everything is text) also `true` and `false`.
 * - null: kept where the schema allows it. An optional property given `null` where the schema does not allow it is
 *   dropped, as if not given: the vastai client sends `null` for every unset field.
 * - array: in a query string a single value where an array is expected is a one-element array (a repeated parameter
 *   already arrives as an array). In a body, JSON arrays only.
 * Anything else is left as it is, for Ajv to reject with a 400 that names the field.
 */
import { badRequest } from './errors.js';

/** One compiled schema, as Fastify's validator compilers return it: Ajv's function, with `errors` after a failure. */
export type Validate = ((data: unknown) => unknown) & { errors?: unknown };
type Compile = (route: { schema: Schema; httpPart?: string; [k: string]: unknown }) => Validate;
export type ValidatorFactory = (externalSchemas: unknown, options: unknown) => Compile;

type Schema = Record<string, unknown>;
type Coerce = (value: unknown) => unknown;
type Part = 'body' | 'querystring' | 'params' | 'headers';

const INTEGER = /^-?(?:0|[1-9][0-9]*)$/;
const NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

/**
 * Body keys no route sets from a body unless its schema names them: owner and system columns of the stored rows
 * (who owns a row, its identity, its times, its counters and flags the server keeps), and the names of
 * `Object.prototype`'s members, which an `in` check or a lookup by key would find on any object.
 */
export const RESERVED_BODY_KEYS: ReadonlySet<string> = new Set([
  'id',
  'user_id',
  'team_id',
  'owner_id',
  'creator_id',
  'created_at',
  'updated_at',
  'deleted_at',
  'revoked_at',
  'load',
  'version',
  'is_admin',
  'credit',
  'credit_micro',
  'email_verified_at',
  'tfa_status',
  'password_hash',
  'key_hash',
  'secret_hash',
  'count_created',
  'fail_count',
  'locked_until',
  ...Object.getOwnPropertyNames(Object.prototype),
  'prototype',
]);

const jsonType = (v: unknown): string =>
  v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'number' ? (Number.isInteger(v) ? 'integer' : 'number') : typeof v;

/** The JSON types a schema accepts, or null when it does not say (no coercion there). */
function typesOf(s: unknown): Set<string> | null {
  if (typeof s !== 'object' || s === null) return null;
  const schema = s as Schema;
  const out = new Set<string>();
  if (schema.type !== undefined) for (const t of [schema.type].flat() as string[]) out.add(t);
  else if ('const' in schema) out.add(jsonType(schema.const));
  else if (Array.isArray(schema.enum)) for (const v of schema.enum) out.add(jsonType(v));
  const branches = (schema.anyOf ?? schema.oneOf) as unknown[] | undefined;
  if (branches) {
    for (const b of branches) {
      const t = typesOf(b);
      if (t === null) return null;
      for (const x of t) out.add(x);
    }
  }
  for (const b of (schema.allOf as unknown[] | undefined) ?? []) for (const x of typesOf(b) ?? []) out.add(x);
  return out.size ? out : null;
}

const accepts = (types: Set<string> | null, v: unknown): boolean => {
  if (types === null) return true;
  const t = jsonType(v);
  return types.has(t) || (t === 'integer' && types.has('number'));
};

/** The declared properties of an object schema (its own and its `allOf` branches'), and which are required. */
function propertiesOf(s: Schema): { props: Map<string, Schema>; required: Set<string> } {
  const props = new Map<string, Schema>();
  const required = new Set<string>();
  const visit = (x: unknown) => {
    if (typeof x !== 'object' || x === null) return;
    const o = x as Schema;
    for (const [k, v] of Object.entries((o.properties as Record<string, Schema> | undefined) ?? {})) props.set(k, v);
    for (const k of (o.required as string[] | undefined) ?? []) required.add(k);
    for (const b of (o.allOf as unknown[] | undefined) ?? []) visit(b);
  };
  visit(s);
  return { props, required };
}

/** The body fields a route's schema declares (for tests that sweep every route). */
export function declaredFields(schema: unknown): string[] {
  return typeof schema === 'object' && schema !== null ? [...propertiesOf(schema as Schema).props.keys()] : [];
}

function scalarCoercion(types: Set<string>, part: Part): Coerce | null {
  const integer = types.has('integer');
  const number = types.has('number');
  const boolean = types.has('boolean') && part !== 'body';
  if (types.has('string') || (!integer && !number && !boolean)) return null;
  return (v) => {
    if (typeof v !== 'string') return v;
    if (integer && INTEGER.test(v)) return Number(v);
    if (number && NUMBER.test(v)) return Number(v);
    if (boolean) {
      if (v === 'true') return true;
      if (v === 'false') return false;
    }
    return v;
  };
}

/** Builds the coercion of one schema node, or null when nothing under it is ever coerced. */
function coercion(s: unknown, part: Part): Coerce | null {
  if (typeof s !== 'object' || s === null) return null;
  const schema = s as Schema;
  const types = typesOf(schema);
  const scalar = types ? scalarCoercion(types, part) : null;
  const items = typeof schema.items === 'object' && schema.items !== null ? coercion(schema.items, part) : null;
  const wrap = part !== 'body' && types !== null && types.has('array');

  const { props, required } = propertiesOf(schema);
  const children: Array<[string, Coerce | null, boolean]> = [];
  for (const [key, child] of props) {
    // An optional property whose schema has no place for null: a null there means "not given".
    const dropNull = !required.has(key) && !accepts(typesOf(child), null);
    const c = coercion(child, part);
    if (c || dropNull) children.push([key, c, dropNull]);
  }

  if (!scalar && !items && !wrap && children.length === 0) return null;
  return (v) => {
    if (v === null || v === undefined) return v;
    if (Array.isArray(v)) {
      if (items) for (let i = 0; i < v.length; i++) v[i] = items(v[i]);
      return v;
    }
    if (typeof v === 'object') {
      const o = v as Record<string, unknown>;
      for (const [key, c, dropNull] of children) {
        if (!Object.hasOwn(o, key)) continue;
        if (o[key] === null && dropNull) delete o[key];
        else if (c) o[key] = c(o[key]);
      }
      return o;
    }
    if (wrap && !accepts(types, v)) return [items ? items(v) : v];
    return scalar ? scalar(v) : v;
  };
}

/** The first body key that names a reserved column the schema does not declare, if any. */
function reservedKeyGuard(schema: Schema): (body: unknown) => string | undefined {
  const declared = propertiesOf(schema).props;
  const forbidden = new Set([...RESERVED_BODY_KEYS].filter((k) => !declared.has(k)));
  return (body) => {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
    for (const key of Object.keys(body)) if (forbidden.has(key)) return key;
    return undefined;
  };
}

/** Wraps a validator compiler (Fastify's Ajv compiler, run with `coerceTypes: false`) with the rules above. */
export function strictValidators(factory: ValidatorFactory): ValidatorFactory {
  return (externalSchemas, options) => {
    const compile = factory(externalSchemas, options);
    return (route) => {
      const validate = compile(route);
      const part = (route.httpPart ?? 'body') as Part;
      const coerce = coercion(route.schema, part);
      const guard = part === 'body' ? reservedKeyGuard(route.schema) : undefined;
      const run: Validate = (data) => {
        if (coerce) coerce(data);
        const reserved = guard?.(data);
        if (reserved !== undefined) {
          run.errors = [{ instancePath: '', keyword: 'reservedProperty', params: { reservedProperty: reserved }, message: 'is kept by the server' }];
          return false;
        }
        const ok = validate(data);
        run.errors = validate.errors;
        return ok;
      };
      return run;
    };
  };
}

/**
 * Some clients repeat the path's id in the body (`id` on `PUT /ssh/{id}/`, `endptjob_id`, `autojob_id`): accepted when
 * it names the same row, a 400 when it names another (which row the caller meant is then unclear).
 */
export function checkEchoedId(given: unknown, pathId: number, field: string): void {
  if (given === undefined || given === null) return;
  if (given !== pathId) throw badRequest(`body.${field} must be the id in the path (${pathId}) when given`);
}

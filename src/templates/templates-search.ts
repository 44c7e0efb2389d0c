/**
 * Template search (spec: Templates, Search; "Additional fields usable in template search filters"): parses
 * `select_filters` `{<field>: {<op>: <value>}}` into column filters, coercing values to each field's type
 * (contract §5: numbers arrive as strings) and naming whatever is wrong.
 */
import { badRequest } from '../platform/errors.js';
import type { ColumnFilter } from './templates-store.js';
import type { TemplatesTable } from './templates-tables.js';

export const SEARCH_OPERATORS = ['eq', 'neq', 'lt', 'lte', 'gt', 'gte', 'in', 'notin'] as const;
type Op = (typeof SEARCH_OPERATORS)[number];
/** Most values one `in`/`notin` list may hold. */
export const SEARCH_IN_LIST_MAX = 1000;

type FieldType = 'number' | 'string' | 'boolean';
type Column = keyof TemplatesTable & string;

/** Searchable field → [column, type]. The password and JSON fields are not searchable: see NOT_SEARCHABLE. */
const FIELDS: Record<string, [Column, FieldType]> = {
  id: ['id', 'number'],
  hash_id: ['hash_id', 'string'],
  name: ['name', 'string'],
  image: ['image', 'string'],
  tag: ['tag', 'string'],
  desc: ['desc', 'string'],
  readme: ['readme', 'string'],
  readme_visible: ['readme_visible', 'boolean'],
  env: ['env', 'string'],
  onstart: ['onstart', 'string'],
  runtype: ['runtype', 'string'],
  args_str: ['args_str', 'string'],
  ssh_direct: ['ssh_direct', 'boolean'],
  use_ssh: ['use_ssh', 'boolean'],
  jup_direct: ['jup_direct', 'boolean'],
  jupyter_dir: ['jupyter_dir', 'string'],
  use_jupyter_lab: ['use_jupyter_lab', 'boolean'],
  docker_login_repo: ['docker_login_repo', 'string'],
  docker_login_user: ['docker_login_user', 'string'],
  href: ['href', 'string'],
  repo: ['repo', 'string'],
  recommended_disk_space: ['recommended_disk_space', 'number'],
  private: ['private', 'boolean'],
  // additional search fields
  creator_id: ['user_id', 'number'],
  created_at: ['created_at', 'number'],
  count_created: ['count_created', 'number'],
  default_tag: ['default_tag', 'string'],
  recent_create_date: ['recent_create_date', 'number'],
  recommended: ['recommended', 'boolean'],
};

/** Fields that exist but cannot be filtered on, with the reason given back to the caller. */
const NOT_SEARCHABLE: Record<string, string> = {
  // A filter on a secret would let anyone guess it one comparison at a time.
  docker_login_pass: 'docker_login_pass cannot be used in a search filter',
  extra_filters: 'extra_filters is an object and cannot be used in a search filter',
  volume_info: 'volume_info is an object and cannot be used in a search filter',
};

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function coerce(field: string, type: FieldType, value: unknown): string | number {
  const fail = () => badRequest(`select_filters.${field}: ${JSON.stringify(value)} is not a ${type}`);
  if (type === 'number') {
    if (typeof value === 'number' && Number.isFinite(value)) return value;
    if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
    throw fail();
  }
  if (type === 'boolean') {
    if (value === true || value === 1 || value === '1' || (typeof value === 'string' && value.toLowerCase() === 'true')) return 1;
    if (value === false || value === 0 || value === '0' || (typeof value === 'string' && value.toLowerCase() === 'false')) return 0;
    throw fail();
  }
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  throw fail();
}

/** Parses the `select_filters` query value. Throws a 400 naming the field or operator at fault. */
export function parseTemplateFilters(raw: string | undefined): ColumnFilter[] {
  if (raw === undefined || raw.trim() === '') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw badRequest('select_filters must be a JSON object');
  }
  if (!isPlainObject(parsed)) throw badRequest('select_filters must be a JSON object');
  const filters: ColumnFilter[] = [];
  for (const [field, condition] of Object.entries(parsed)) {
    // Own keys only: "constructor" or "__proto__" must not find Object.prototype's members.
    if (Object.hasOwn(NOT_SEARCHABLE, field)) throw badRequest(NOT_SEARCHABLE[field]);
    const spec = Object.hasOwn(FIELDS, field) ? FIELDS[field] : undefined;
    if (!spec) throw badRequest(`select_filters: unknown field ${JSON.stringify(field)}`);
    const [column, type] = spec;
    if (!isPlainObject(condition)) throw badRequest(`select_filters.${field} must be an object like {"eq": value}`);
    if (Object.keys(condition).length === 0) throw badRequest(`select_filters.${field} has no operator`);
    // Several operators on one field must all hold (contract §6).
    for (const [op, value] of Object.entries(condition)) {
      if (!(SEARCH_OPERATORS as readonly string[]).includes(op)) {
        throw badRequest(`select_filters.${field}: unknown operator ${JSON.stringify(op)}; use one of ${SEARCH_OPERATORS.join(', ')}`);
      }
      if (op === 'in' || op === 'notin') {
        if (!Array.isArray(value)) throw badRequest(`select_filters.${field}.${op} must be a list`);
        if (value.length > SEARCH_IN_LIST_MAX) throw badRequest(`select_filters.${field}.${op}: at most ${SEARCH_IN_LIST_MAX} values`);
        filters.push({ column, op, value: value.map((v) => coerce(field, type, v)) });
      } else if (value === null) {
        if (op !== 'eq' && op !== 'neq') throw badRequest(`select_filters.${field}.${op}: null is only allowed with eq and neq`);
        filters.push({ column, op: op as Op, value: null });
      } else {
        filters.push({ column, op: op as Op, value: coerce(field, type, value) });
      }
    }
  }
  return filters;
}

/**
 * Turning a create or edit body into template content: defaults (spec: `tag` latest, `runtype` args,
 * `recommended_disk_space` 8), coercion of what the vastai client sends as strings, and validation that names the
 * field at fault.
 */
import { badRequest } from '../platform/errors.js';
import { EnvParseError, parseDockerEnv } from './templates-contract.js';
import { SEARCH_OPERATORS } from './templates-search.js';
import type { CreateTemplateBody } from './templates-types.js';

export const DEFAULT_TAG = 'latest';
export const DEFAULT_RUNTYPE = 'args';
/** Spec Limits: default `recommended_disk_space` is 8 GB. */
export const DEFAULT_RECOMMENDED_DISK_GB = 8;
/** Upper bound on `recommended_disk_space` (GB): far above any real disk, low enough to stay a sane number. */
export const RECOMMENDED_DISK_MAX_GB = 1_000_000;
/** Serialised size cap of `extra_filters` and `volume_info`. */
export const TEMPLATE_JSON_MAX_CHARS = 16_384;

/** Everything that makes up a template except its identity, counters and password. */
export interface TemplateContent {
  name: string;
  image: string;
  tag: string;
  desc: string;
  readme: string;
  readme_visible: boolean;
  env: string;
  onstart: string;
  runtype: string;
  args_str: string;
  ssh_direct: boolean;
  use_ssh: boolean;
  jup_direct: boolean;
  jupyter_dir: string | null;
  use_jupyter_lab: boolean;
  docker_login_repo: string;
  docker_login_user: string;
  href: string;
  repo: string;
  extra_filters: Record<string, unknown>;
  recommended_disk_space: number;
  private: boolean;
  volume_info: Record<string, unknown> | null;
}

/** A new template before the body is applied. Private unless asked otherwise, as the vastai client defaults. */
export function defaultContent(): TemplateContent {
  return {
    name: '', image: '', tag: DEFAULT_TAG, desc: '', readme: '', readme_visible: true, env: '', onstart: '',
    runtype: DEFAULT_RUNTYPE, args_str: '', ssh_direct: false, use_ssh: false, jup_direct: false, jupyter_dir: null,
    use_jupyter_lab: false, docker_login_repo: '', docker_login_user: '', href: '', repo: '', extra_filters: {},
    recommended_disk_space: DEFAULT_RECOMMENDED_DISK_GB, private: true, volume_info: null,
  };
}

function diskSpace(value: number | string): number {
  const n = typeof value === 'number' ? value : value.trim() === '' ? NaN : Number(value);
  if (!Number.isFinite(n) || n <= 0 || n > RECOMMENDED_DISK_MAX_GB) {
    throw badRequest(`body.recommended_disk_space must be a number of GB above 0 and at most ${RECOMMENDED_DISK_MAX_GB}`);
  }
  return n;
}

function checkJsonSize(field: string, value: unknown): void {
  if (JSON.stringify(value).length > TEMPLATE_JSON_MAX_CHARS) throw badRequest(`body.${field} is too large`);
}

/** `extra_filters` is an offer filter object: `{<offer field>: {<op>: <value>}}`. */
function checkExtraFilters(filters: Record<string, unknown>): void {
  checkJsonSize('extra_filters', filters);
  for (const [field, cond] of Object.entries(filters)) {
    if (typeof cond !== 'object' || cond === null || Array.isArray(cond)) {
      throw badRequest(`body.extra_filters.${field} must be an object like {"eq": value}`);
    }
    for (const op of Object.keys(cond)) {
      if (!(SEARCH_OPERATORS as readonly string[]).includes(op)) {
        throw badRequest(`body.extra_filters.${field}: unknown operator ${JSON.stringify(op)}`);
      }
    }
  }
}

/**
 * Applies the given (non-null) body fields onto `base`. `null` and absent both leave a field as it is; an empty
 * `tag` or `runtype` falls back to the spec default.
 */
export function applyBody(base: TemplateContent, body: CreateTemplateBody): TemplateContent {
  const next: TemplateContent = { ...base };
  const set = <K extends keyof TemplateContent>(key: K, value: TemplateContent[K] | null | undefined) => {
    if (value !== null && value !== undefined) next[key] = value;
  };
  set('name', body.name?.trim());
  set('image', body.image?.trim());
  set('tag', body.tag === '' ? DEFAULT_TAG : body.tag?.trim());
  for (const k of ['desc', 'readme', 'env', 'onstart', 'args_str', 'docker_login_repo', 'docker_login_user', 'href', 'repo'] as const) {
    set(k, body[k]);
  }
  for (const k of ['readme_visible', 'ssh_direct', 'use_ssh', 'jup_direct', 'use_jupyter_lab', 'private'] as const) set(k, body[k]);
  set('runtype', body.runtype);
  if (body.jupyter_dir !== undefined && body.jupyter_dir !== null) next.jupyter_dir = body.jupyter_dir === '' ? null : body.jupyter_dir;
  if (body.recommended_disk_space !== undefined && body.recommended_disk_space !== null) {
    next.recommended_disk_space = diskSpace(body.recommended_disk_space);
  }
  if (body.extra_filters) {
    checkExtraFilters(body.extra_filters);
    next.extra_filters = body.extra_filters;
  }
  if (body.volume_info) {
    checkJsonSize('volume_info', body.volume_info);
    next.volume_info = body.volume_info;
  }

  if (next.name === '') throw badRequest('body.name is required');
  if (next.image === '') throw badRequest('body.image is required');
  if (/\s/.test(next.image)) throw badRequest('body.image must be an image path without spaces');
  if (/\s/.test(next.tag)) throw badRequest('body.tag must not contain spaces');
  try {
    parseDockerEnv(next.env);
  } catch (e) {
    if (e instanceof EnvParseError) throw badRequest(`body.env must be in Docker flag form (-e NAME=value -p 8080:8080): ${e.message}`);
    throw e;
  }
  return next;
}

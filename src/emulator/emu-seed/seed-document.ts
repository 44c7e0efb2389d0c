/**
 * Issue 34 item 2: the declarative seed file, a world a test suite starts from in one line: the fleet's machines, users
 * with keys they chose and credit, their templates, SSH keys and environment variables. Read whole and checked before
 * anything is applied, so a bad file changes nothing; every error names the path of the field (`users[1].api_keys[0].key`).
 */
import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { ApiError } from '../../platform/errors.js';
import { parsePermissionDoc, type PermissionDoc } from '../../platform/permissions.js';
import { NewMachineBody, type NewMachineInput } from '../emulator-schemas.js';
import { CreateTemplateBody } from '../../templates/templates-types.js';
import { EnvVarBody } from '../../env-vars/env-vars-types.js';

/** Machines one entry's `count` may repeat; all entries together at most MAX_SEED_MACHINES. */
export const MAX_SEED_MACHINES = 1000;
export const MAX_SEED_USERS = 1000;
/** A seeded key is a Bearer token (platform/auth.ts) as long as the bootstrap key must be at least. */
const KEY_PATTERN = /^[A-Za-z0-9._~+/=-]{16,512}$/;
/** Prefixes of the keys gpuplane makes for sessions, instances and scheduled jobs (keys-service.ts KEY_PREFIX). */
const RESERVED_KEY_PREFIXES = ['gps_', 'gpi_', 'gpj_'];
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

export interface SeedKey {
  key: string;
  name?: string;
  permissions?: PermissionDoc;
}

export interface SeedUser {
  email: string;
  password?: string;
  full_name?: string;
  credit?: number;
  is_admin?: boolean;
  api_keys: SeedKey[];
  /** Each as `POST /api/v0/template/`'s body (name and image required). */
  templates: Record<string, unknown>[];
  ssh_keys: string[];
  env_vars: Record<string, string>;
}

export interface SeedMachine {
  /** `POST /_emu/machines`' body, without owner_user_id (named by `owner`, a seeded user's e-mail). */
  body: NewMachineInput;
  count: number;
  owner?: string;
}

export interface SeedDocument {
  /** `none`: the machines already there (the seeded default fleet) leave the offers; only the seed's are offered. */
  fleet: 'default' | 'none';
  users: SeedUser[];
  machines: SeedMachine[];
}

const bad = (path: string, why: string) => new ApiError('bad_request', `${path}: ${why}`);

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function only(path: string, v: Record<string, unknown>, allowed: readonly string[]): void {
  const extra = Object.keys(v).find((k) => !allowed.includes(k));
  if (extra !== undefined) throw bad(path ? `${path}.${extra}` : extra, `unknown field (known: ${allowed.join(', ')})`);
}

function list(path: string, v: unknown, max: number): unknown[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw bad(path, 'must be an array');
  if (v.length > max) throw bad(path, `at most ${max} entries`);
  return v;
}

function optString(path: string, v: unknown, min: number, max: number): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v.length < min || v.length > max) throw bad(path, `must be a string of ${min} to ${max} characters`);
  return v;
}

function optBool(path: string, v: unknown): boolean | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw bad(path, 'must be true or false');
  return v;
}

function parseKey(path: string, v: unknown): SeedKey {
  if (!isObject(v)) throw bad(path, 'must be an object {key, name?, permissions?}');
  only(path, v, ['key', 'name', 'permissions']);
  const key = v.key;
  if (typeof key !== 'string' || !KEY_PATTERN.test(key)) {
    // The value itself is not echoed: it is a secret.
    throw bad(`${path}.key`, 'must be 16 to 512 characters of A-Z a-z 0-9 . _ ~ + / = -');
  }
  if (RESERVED_KEY_PREFIXES.some((p) => key.startsWith(p))) throw bad(`${path}.key`, `must not start with ${RESERVED_KEY_PREFIXES.join(', ')} (gpuplane's own kinds of keys)`);
  let permissions: PermissionDoc | undefined;
  if (v.permissions !== undefined && v.permissions !== null) {
    const parsed = parsePermissionDoc(v.permissions);
    if (typeof parsed === 'string') throw bad(`${path}.permissions`, parsed);
    permissions = parsed;
  }
  return { key, name: optString(`${path}.name`, v.name, 1, 200), permissions };
}

function parseUser(path: string, v: unknown): SeedUser {
  if (!isObject(v)) throw bad(path, 'must be an object');
  only(path, v, ['email', 'password', 'full_name', 'credit', 'is_admin', 'api_keys', 'templates', 'ssh_keys', 'env_vars']);
  const email = v.email;
  if (typeof email !== 'string' || !/^[^\s@]{1,64}@[^\s@]{1,190}$/.test(email)) throw bad(`${path}.email`, 'must be an e-mail address');
  const credit = v.credit;
  if (credit !== undefined && (typeof credit !== 'number' || !Number.isFinite(credit) || credit < 0 || credit > 1e9)) {
    throw bad(`${path}.credit`, 'must be a number of dollars from 0 to 1e9');
  }
  const templates = list(`${path}.templates`, v.templates, 100).map((t, i) => {
    const p = `${path}.templates[${i}]`;
    if (!isObject(t)) throw bad(p, 'must be an object (the fields of a template: name, image, …)');
    if (typeof t.name !== 'string' || !t.name) throw bad(`${p}.name`, 'required');
    if (typeof t.image !== 'string' || !t.image) throw bad(`${p}.image`, 'required');
    firstError(p, CreateTemplateBody, t);
    return t;
  });
  const sshKeys = list(`${path}.ssh_keys`, v.ssh_keys, 100).map((k, i) => {
    if (typeof k !== 'string' || !k.trim()) throw bad(`${path}.ssh_keys[${i}]`, 'must be an OpenSSH public key line');
    return k;
  });
  const envVars: Record<string, string> = {};
  if (v.env_vars !== undefined) {
    if (!isObject(v.env_vars)) throw bad(`${path}.env_vars`, 'must be an object {NAME: value}');
    for (const [name, value] of Object.entries(v.env_vars)) {
      if (!ENV_NAME.test(name)) throw bad(`${path}.env_vars.${name}`, 'the name must be letters, digits and _, not starting with a digit');
      if (typeof value !== 'string') throw bad(`${path}.env_vars.${name}`, 'must be a string');
      firstError(`${path}.env_vars.${name}`, EnvVarBody, { key: name, value });
      envVars[name] = value;
    }
  }
  return {
    email,
    password: optString(`${path}.password`, v.password, 1, 1000),
    full_name: optString(`${path}.full_name`, v.full_name, 0, 200),
    credit: credit as number | undefined,
    is_admin: optBool(`${path}.is_admin`, v.is_admin),
    api_keys: list(`${path}.api_keys`, v.api_keys, 100).map((k, i) => parseKey(`${path}.api_keys[${i}]`, k)),
    templates,
    ssh_keys: sshKeys,
    env_vars: envVars,
  };
}

function parseMachine(path: string, v: unknown): SeedMachine {
  if (!isObject(v)) throw bad(path, 'must be an object (the fields of `gpuplane emu add-machine`, count, owner)');
  const { count = 1, owner, ...body } = v;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > MAX_SEED_MACHINES) {
    throw bad(`${path}.count`, `must be an integer from 1 to ${MAX_SEED_MACHINES}`);
  }
  if (owner !== undefined && typeof owner !== 'string') throw bad(`${path}.owner`, "must be a seeded user's e-mail");
  if ('owner_user_id' in body) throw bad(`${path}.owner_user_id`, "name the host by owner (a seeded user's e-mail) instead");
  // The same checks as POST /_emu/machines, with the field's path.
  firstError(path, NewMachineBody, body);
  return { body: body as NewMachineInput, count, owner };
}

/** The first error of `value` against a route's body schema, as a 400 naming its path under `path`. */
function firstError(path: string, schema: TSchema, value: unknown): void {
  const first = Value.Errors(schema, value)[Symbol.iterator]().next();
  if (first.done) return;
  const e = first.value as { keyword: string; instancePath: string; message: string; params?: { additionalProperties?: string[] } };
  const extra = e.params?.additionalProperties?.[0];
  if (extra !== undefined) throw bad(`${path}.${extra}`, 'unknown field');
  const field = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
  // A field the schema does not have (additionalProperties: false) fails as the schema `false`.
  if (e.keyword === 'boolean') throw bad(`${path}.${field}`, 'unknown field');
  throw bad(field ? `${path}.${field}` : path, e.message);
}

/** Checks a seed document whole; throws 400 bad_request naming the first bad field. */
export function parseSeedDocument(doc: unknown): SeedDocument {
  if (!isObject(doc)) throw bad('seed', 'must be a JSON object {fleet?, machines?, users?}');
  only('', doc, ['fleet', 'machines', 'users']);
  const fleet = doc.fleet ?? 'default';
  if (fleet !== 'default' && fleet !== 'none') throw bad('fleet', 'must be "default" (keep the seeded fleet) or "none" (only the seed\'s machines)');
  const users = list('users', doc.users, MAX_SEED_USERS).map((u, i) => parseUser(`users[${i}]`, u));
  const machines = list('machines', doc.machines, MAX_SEED_MACHINES).map((m, i) => parseMachine(`machines[${i}]`, m));
  const emails = new Set<string>();
  const keys = new Set<string>();
  users.forEach((u, i) => {
    if (emails.has(u.email.toLowerCase())) throw bad(`users[${i}].email`, `${u.email} appears twice`);
    emails.add(u.email.toLowerCase());
    u.api_keys.forEach((k, j) => {
      if (keys.has(k.key)) throw bad(`users[${i}].api_keys[${j}].key`, 'the same key appears twice');
      keys.add(k.key);
    });
  });
  machines.forEach((m, i) => {
    if (m.owner !== undefined && !emails.has(m.owner.toLowerCase())) throw bad(`machines[${i}].owner`, `${m.owner} is not one of the seed's users`);
  });
  if (machines.reduce((n, m) => n + m.count, 0) > MAX_SEED_MACHINES) throw bad('machines', `at most ${MAX_SEED_MACHINES} machines in all (count included)`);
  return { fleet, users, machines };
}

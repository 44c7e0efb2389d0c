/**
 * Issue 34 item 5 (recorder): what counts as a secret in a recorded API call, and how it is replaced. Each secret
 * becomes a placeholder `<secret:N>`, the same N for the same secret within a recording, so `gpuplane emu replay` can
 * map it: a key the recording saw created (a reply revealed it) is the key the replay's reply creates, a password the
 * client chose is one stand-in wherever it recurs. The lists are explicit (and tested, test/emu-recorder.test.ts):
 * a field the API adds that carries a secret must be named here.
 */

/** Body and reply fields (exact names, anywhere in the JSON) whose string values are secrets. */
export const SECRET_FIELDS: ReadonlySet<string> = new Set([
  // API keys: created (`POST /auth/apikeys/` → key), reset (new_api_key), the emulator's users (api_key), an
  // instance's own key, a serverless endpoint's key.
  'api_key', 'key', 'new_api_key', 'instance_api_key',
  // Passwords: sign-up, login, change, the registry login of an instance or template.
  'password', 'current_password', 'new_password', 'docker_login_pass',
  // Registry logins written as one string (`-u user -p pass registry`).
  'docker_login', 'image_login',
  // Two-factor: TOTP secrets and their otpauth:// URI, codes sent or typed, backup codes.
  'secret', 'tfa_secret', 'totp_secret', 'provisioning_uri', 'code', 'backup_code', 'backup_codes',
  // Tokens: e-mail verification and password reset, port tokens, the console's session key, machine keys (host
  // registration), the serverless worker's mtoken, an instance's Jupyter token.
  'token', 'session_key', 'machine_key', 'mtoken', 'jupyter_token',
]);

/** Fields whose every string value, at any depth, is secret: `GET /api/v0/secrets/` replies `{secrets: {NAME: value}}`. */
export const SECRET_CONTAINERS: ReadonlySet<string> = new Set(['secrets']);

/** Fields secret on some routes only: an env var's `value` (`POST/PUT /api/v0/secrets/`); there `key` is its name. */
export const ROUTE_FIELDS: readonly { prefix: string; secret: readonly string[]; notSecret: readonly string[] }[] = [
  { prefix: '/api/v0/secrets', secret: ['value'], notSecret: ['key'] },
];

/** Query parameters (and `name=value` inside any recorded string, e.g. a reset link in an e-mail) that are secrets. */
export const SECRET_PARAMS = ['api_key', 'key', 'secret', 'session_key', 'tfa_secret', 'code', 'backup_code', 'password', 'docker_login_pass', 'token'];

/** Paths whose next segment is a credential (the log's `result_url` token, as platform/http.ts redacts in logs). */
export const TOKEN_PATHS = ['/api/v0/instances/logs/'];

/** Request headers kept in a recording; `authorization` and `cookie` with their secrets replaced. */
export const KEPT_HEADERS = ['content-type', 'authorization', 'cookie', 'x-gpuplane-csrf', 'idempotency-key'];

/** Reply headers kept (what a client acts on: a 429's wait, a redirect). */
export const KEPT_REPLY_HEADERS = ['retry-after', 'location'];

/** An environment variable whose name says it holds a secret (`-e HF_TOKEN=…` in an instance's env). */
const SECRET_ENV_NAME = /(KEY|TOKEN|SECRET|PASS|PASSWORD|PASSWD|CREDENTIAL|AUTH)/i;
/** A private key pasted anywhere (an SSH key field, an env var, onstart). */
const PRIVATE_KEY = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g;
/** Public keys are not secrets, and a replay must send them as they were (the server checks their format). */
const PUBLIC_KEY = /^(ssh-[a-z0-9]+|ecdsa-sha2-[a-z0-9]+|sk-[a-z0-9@.-]+) /;
const PARAM_IN_TEXT = new RegExp(`([?&](?:${SECRET_PARAMS.join('|')})=)([^&#\\s"'<>]+)`, 'gi');
/**
 * `-e NAME=value` (an env string), `NAME=value` or `export NAME=value` (onstart): the value when the name says secret.
 * Without `-e`, only an upper-case name (an environment variable's, by convention), so `--token_file=x` stays.
 */
const ENV_IN_TEXT = /((?:^|[\s;&|('"])(?:-e\s+([A-Za-z_][A-Za-z0-9_]*)|([A-Z_][A-Z0-9_]*))=)([^\s;&|'")]+)/g;
/** Shorter known secrets are not searched for inside other strings (a 6-digit code is; a 2-letter value is not). */
const MIN_SUBSTITUTED = 6;
/** Nesting deeper than this is recorded as a note, not walked (a body may nest 200,000 levels within its limit). */
const MAX_DEPTH = 64;

export const PLACEHOLDER = /<secret:(\d+)>/g;
export const placeholder = (n: number): string => `<secret:${n}>`;

/** Replaces the secrets of one recording, numbering each distinct secret once. */
export class Redactor {
  private readonly ids = new Map<string, number>();
  /** Known secrets, longest first, for finding them inside other strings. */
  private known: string[] = [];

  /** `next`: the number the first secret gets (a recording appended to goes on after the numbers it has). */
  constructor(private next = 1) {}

  /** The placeholder of a secret (numbered on first sight). */
  secret(value: string): string {
    let n = this.ids.get(value);
    if (n === undefined) {
      n = this.next++;
      this.ids.set(value, n);
      if (value.length >= MIN_SUBSTITUTED) this.known = [...this.ids.keys()].filter((s) => s.length >= MIN_SUBSTITUTED).sort((a, b) => b.length - a.length);
    }
    return placeholder(n);
  }

  /** A path with query: token path segments and secret parameters replaced. */
  url(url: string): string {
    for (const prefix of TOKEN_PATHS) {
      if (url.startsWith(prefix)) url = prefix + url.slice(prefix.length).replace(/^[^/?#]+/, (s) => this.secret(safeDecode(s)));
    }
    return url.replace(PARAM_IN_TEXT, (_m, name: string, value: string) => name + this.secret(safeDecode(value)));
  }

  /** The kept request headers, their secrets replaced. */
  headers(headers: Record<string, string | string[] | undefined>): Record<string, string> {
    const out: Record<string, string> = {};
    for (const name of KEPT_HEADERS) {
      const raw = headers[name];
      if (raw === undefined) continue;
      const value = Array.isArray(raw) ? raw.join(', ') : raw;
      if (name === 'authorization') {
        const m = /^(\S+)\s+(.+)$/.exec(value);
        out[name] = m ? `${m[1]} ${this.secret(m[2].trim())}` : this.secret(value);
      } else if (name === 'cookie') {
        out[name] = value.split(';').map((c) => {
          const i = c.indexOf('=');
          return i < 0 ? c.trim() : `${c.slice(0, i).trim()}=${this.secret(c.slice(i + 1).trim())}`;
        }).join('; ');
      } else if (name === 'x-gpuplane-csrf') out[name] = this.secret(value);
      else out[name] = value;
    }
    return out;
  }

  /**
   * A JSON value (a request body or a reply) with its secrets replaced. Two passes: the secret fields are numbered
   * first, so that a secret is found wherever it also appears in the same value (an e-mail's text carrying its code).
   */
  json(value: unknown, path: string): unknown {
    const fields = routeFields(path);
    try {
      this.collect(value, fields, false, 0);
      return this.redact(value, fields, false, 0);
    } catch (err) {
      if (err instanceof TooDeep) return '<not recorded: nested too deep>';
      throw err;
    }
  }

  /** A text reply (not JSON): known secrets and secret parameters replaced. */
  text(value: string): string {
    return this.string(value);
  }

  private isSecretField(name: string, fields: RouteFields): boolean {
    if (fields.notSecret.has(name)) return false;
    return SECRET_FIELDS.has(name) || fields.secret.has(name);
  }

  /**
   * Whether the strings under field `k` are secrets: all of them under a container (`secrets`); under a secret field,
   * its string or its list of strings only (an SSH key's reply is `{key: {id, ssh_key, …}}`: an object, not a secret).
   */
  private secretBelow(inSecret: boolean, k: string, x: unknown, fields: RouteFields): boolean {
    if (inSecret || SECRET_CONTAINERS.has(k)) return true;
    if (!this.isSecretField(k, fields)) return false;
    return typeof x === 'string' || (Array.isArray(x) && x.every((e) => typeof e === 'string'));
  }

  private collect(v: unknown, fields: RouteFields, inSecret: boolean, depth: number): void {
    if (depth > MAX_DEPTH) throw new TooDeep();
    if (Array.isArray(v)) for (const x of v) this.collect(x, fields, inSecret, depth + 1);
    else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        this.collect(x, fields, this.secretBelow(inSecret, k, x, fields), depth + 1);
      }
    } else if (typeof v === 'string' && inSecret && isSecretValue(v)) this.secret(v);
  }

  private redact(v: unknown, fields: RouteFields, inSecret: boolean, depth: number): unknown {
    if (Array.isArray(v)) return v.map((x) => this.redact(x, fields, inSecret, depth + 1));
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        if (k === 'env' && x !== null && typeof x === 'object' && !Array.isArray(x)) out[k] = this.envObject(x as Record<string, unknown>);
        else out[k] = this.redact(x, fields, this.secretBelow(inSecret, k, x, fields), depth + 1);
      }
      return out;
    }
    if (typeof v === 'string') return inSecret && isSecretValue(v) ? this.secret(v) : this.string(v);
    return v;
  }

  /** An instance's env as an object (`{"-e HF_TOKEN": "…", "-p 8080:8080": "1"}`): secret-named variables' values. */
  private envObject(env: Record<string, unknown>): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(env)) {
      const name = k.replace(/^-e\s+/, '');
      out[k] = typeof x === 'string' && SECRET_ENV_NAME.test(name) && x !== '' ? this.secret(x) : typeof x === 'string' ? this.string(x) : x;
    }
    return out;
  }

  /** Any other string: private keys, secret parameters, secret env assignments, and known secrets inside it. */
  private string(s: string): string {
    let out = s.replace(PRIVATE_KEY, (m) => this.secret(m));
    if (out.includes('=')) {
      out = out.replace(PARAM_IN_TEXT, (_m, name: string, value: string) => name + this.secret(safeDecode(value)));
      out = out.replace(ENV_IN_TEXT, (m, head: string, eName: string | undefined, name: string | undefined, value: string) =>
        (SECRET_ENV_NAME.test(eName ?? name ?? '') && !/^<secret:\d+>$/.test(value) ? head + this.secret(value) : m));
    }
    for (const known of this.known) if (out.includes(known)) out = out.split(known).join(this.secret(known));
    return out;
  }
}

class TooDeep extends Error {}

interface RouteFields {
  secret: ReadonlySet<string>;
  notSecret: ReadonlySet<string>;
}

function routeFields(path: string): RouteFields {
  const rule = ROUTE_FIELDS.find((r) => path === r.prefix || path.startsWith(`${r.prefix}/`) || path.startsWith(`${r.prefix}?`));
  return { secret: new Set(rule?.secret ?? []), notSecret: new Set(rule?.notSecret ?? []) };
}

/** Empty strings and public keys stay as they are; an already redacted value is not numbered again. */
function isSecretValue(v: string): boolean {
  return v !== '' && !PUBLIC_KEY.test(v) && !/^<secret:\d+>$/.test(v);
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

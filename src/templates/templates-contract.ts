/**
 * What other features use of templates: merging a template into an instance creation request (spec: Create
 * instance, rules 1-4; the instances feature) and the Docker-flag env parser (instances, serverless deployments).
 * Pure functions: no I/O, no clock, so those features and the tests can call them directly.
 */

/** Instance-creation default `disk` in GB (spec: Limits), used only when neither request nor template says. */
export const DEFAULT_INSTANCE_DISK_GB = 8;

/** What `env` looks like on an instance: name → value; a port mapping is `"-p 8080:8080": "1"` (spec). */
export type EnvObject = Record<string, string>;

/** A template as the instances feature receives it from `templates.getForCreate` (credentials decrypted). */
export interface TemplateForCreate {
  id: number;
  hash_id: string;
  name: string;
  image: string;
  tag: string;
  /** Docker-flag form, e.g. `-e NAME=value -p 8080:8080`. */
  env: string;
  onstart: string;
  /** `ssh`, `jupyter` or `args`. */
  runtype: string;
  args_str: string;
  ssh_direct: boolean;
  use_ssh: boolean;
  jup_direct: boolean;
  jupyter_dir: string | null;
  use_jupyter_lab: boolean;
  docker_login_repo: string;
  docker_login_user: string;
  /** Plain text here (decrypted for creation only); never sent back to anyone but the owner. */
  docker_login_pass: string;
  extra_filters: Record<string, unknown>;
  recommended_disk_space: number;
  /** UI hint only: the merge ignores it (spec: a template's volume_info attaches nothing). */
  volume_info: unknown;
}

/**
 * The creation request fields the merge looks at. `null` and `undefined` both mean "not given" (the vastai client
 * sends every key, null when unset). Other request fields pass through untouched.
 */
export interface CreateRequestLike {
  image?: string | null;
  disk?: number | null;
  runtype?: string | null;
  env?: EnvObject | null;
  onstart?: string | null;
  args_str?: string | null;
  use_jupyter_lab?: boolean | null;
  jupyter_dir?: string | null;
  image_login?: string | null;
  extra_filters?: Record<string, unknown> | null;
  volume_info?: unknown;
  [other: string]: unknown;
}

/** The request after the merge: every merged field resolved, plus the template's identity and credentials. */
export type MergedCreateRequest<R extends CreateRequestLike> = Omit<R, keyof MergedFields> & MergedFields;

/** The fields the merge resolves (whatever type the request gave them, the merged type is this). */
export interface MergedFields {
  image: string;
  disk: number;
  runtype: string;
  env: EnvObject;
  onstart: string | null;
  args_str: string | null;
  use_jupyter_lab: boolean;
  jupyter_dir: string | null;
  image_login: string | null;
  extra_filters: Record<string, unknown>;
  volume_info: unknown;
  docker_login_repo: string;
  docker_login_user: string;
  docker_login_pass: string;
  template_id: number;
  template_hash_id: string;
}

/** A template `env` string that is not Docker-flag form. The caller turns it into a 400 naming the field. */
export class EnvParseError extends Error {}

/**
 * Splits like a POSIX shell would for the cases templates use: whitespace separates words, single quotes keep
 * everything literally, double quotes allow `\"` and `\\`, a backslash outside quotes escapes the next character.
 */
export function shellSplit(text: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) throw new EnvParseError('unterminated single quote');
      word += text.slice(i + 1, end);
      i = end;
      inWord = true;
    } else if (ch === '"') {
      let j = i + 1;
      for (; j < text.length && text[j] !== '"'; j++) {
        if (text[j] === '\\' && (text[j + 1] === '"' || text[j + 1] === '\\')) j++;
        word += text[j];
      }
      if (j >= text.length) throw new EnvParseError('unterminated double quote');
      i = j;
      inWord = true;
    } else if (ch === '\\' && i + 1 < text.length) {
      word += text[++i];
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += ch;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
/** `[ip:]host:container[/proto]` or a bare container port, as `docker run -p` takes it. */
const PORT_SPEC = /^(?:[0-9.]+:)?(?:\d{1,5}(?:-\d{1,5})?:)?\d{1,5}(?:-\d{1,5})?(?:\/(?:tcp|udp|sctp))?$/;

/**
 * Parses a template's Docker-flag `env` (`-e NAME=value -p 8080:8080 -h host`) into the instance object form:
 * `-e NAME=value` → `NAME: "value"`; `-p SPEC` → `"-p SPEC": "1"` (spec: port mapping key with value `1`);
 * any other flag `-x value` → `"-x": "value"`, a flag with no value → `"-x": "1"`. Later entries win, as in Docker.
 * @throws EnvParseError naming the offending word.
 */
export function parseDockerEnv(text: string | null | undefined): EnvObject {
  const env: EnvObject = {};
  if (!text || text.trim() === '') return env;
  const words = shellSplit(text);
  for (let i = 0; i < words.length; i++) {
    const word = words[i];
    let flag = word;
    let value: string | undefined;
    const eq = word.indexOf('=');
    // `--env=NAME=value` and `-e=NAME=value` carry their value in the same word.
    if (word.startsWith('-') && eq > 0 && /^--?[A-Za-z-]+$/.test(word.slice(0, eq))) {
      flag = word.slice(0, eq);
      value = word.slice(eq + 1);
    }
    if (!flag.startsWith('-') || flag === '-' || flag === '--') {
      throw new EnvParseError(`unexpected ${JSON.stringify(word)}: expected a flag such as -e NAME=value or -p 8080:8080`);
    }
    const takeValue = (): string | undefined => {
      if (value !== undefined) return value;
      const next = words[i + 1];
      if (next === undefined || (next.startsWith('-') && next.length > 1 && !/^-\d/.test(next))) return undefined;
      i++;
      return next;
    };
    if (flag === '-e' || flag === '--env') {
      const assignment = takeValue();
      if (assignment === undefined) throw new EnvParseError(`${flag} needs NAME=value`);
      const at = assignment.indexOf('=');
      const name = at < 0 ? assignment : assignment.slice(0, at);
      if (!ENV_NAME.test(name)) throw new EnvParseError(`invalid variable name ${JSON.stringify(name)}`);
      env[name] = at < 0 ? '' : assignment.slice(at + 1);
    } else if (flag === '-p' || flag === '--publish') {
      const spec = takeValue();
      if (spec === undefined || !PORT_SPEC.test(spec)) throw new EnvParseError(`${flag} needs a port mapping such as 8080:8080`);
      env[`-p ${spec}`] = '1';
    } else {
      env[flag] = takeValue() ?? '1';
    }
  }
  return env;
}

/** Template `image` plus `tag`, unless the image already names a tag or digest. */
export function templateImageRef(image: string, tag: string): string {
  const lastSegment = image.slice(image.lastIndexOf('/') + 1);
  if (image.includes('@') || lastSegment.includes(':') || !tag) return image;
  return `${image}:${tag}`;
}

/**
 * The instance runtype a template's launch mode stands for (spec runtype table): `ssh` with `ssh_direct` is
 * `ssh_direct`, otherwise the proxy form; `jupyter` likewise with `jup_direct`; `args` stays.
 */
export function templateRuntype(t: Pick<TemplateForCreate, 'runtype' | 'ssh_direct' | 'jup_direct'>): string {
  if (t.runtype === 'jupyter') return t.jup_direct ? 'jupyter_direct' : 'jupyter_proxy';
  if (t.runtype === 'ssh') return t.ssh_direct ? 'ssh_direct' : 'ssh_proxy';
  return 'args';
}

/** `-u <user> -p <pass> <repo>` (spec: image_login form), or null when the template has no registry login. */
export function templateImageLogin(t: Pick<TemplateForCreate, 'docker_login_repo' | 'docker_login_user' | 'docker_login_pass'>): string | null {
  if (!t.docker_login_user && !t.docker_login_pass) return null;
  return [`-u ${t.docker_login_user}`, `-p ${t.docker_login_pass}`, t.docker_login_repo].filter(Boolean).join(' ');
}

const given = <T>(v: T | null | undefined): v is T => v !== null && v !== undefined;

/**
 * Merges a template into a creation request (spec: Create instance rules 1-4):
 * 1. scalar request fields (image, disk, runtype, onstart, args_str, jupyter fields, image_login) override;
 * 2. `env`: the template's Docker-flag env parsed to object form, then the request's keys on top (request wins);
 * 3. `extra_filters` merged by key, request wins;
 * 4. the template's `docker_login_*` credentials carry over (and make `image_login` when the request has none).
 * The template's `volume_info` is a UI hint and is dropped; only the request's own `volume_info` survives.
 * @throws EnvParseError when the stored template env is not Docker-flag form (validated on template save).
 */
export function mergeTemplateIntoRequest<R extends CreateRequestLike>(template: TemplateForCreate, request: R): MergedCreateRequest<R> {
  const env = { ...parseDockerEnv(template.env), ...(request.env ?? {}) };
  const extra_filters = { ...(template.extra_filters ?? {}), ...(request.extra_filters ?? {}) };
  return {
    ...request,
    image: given(request.image) && request.image !== '' ? request.image : templateImageRef(template.image, template.tag),
    disk: given(request.disk) ? request.disk : (template.recommended_disk_space ?? DEFAULT_INSTANCE_DISK_GB),
    runtype: given(request.runtype) && request.runtype !== '' ? request.runtype : templateRuntype(template),
    env,
    onstart: given(request.onstart) ? request.onstart : template.onstart || null,
    args_str: given(request.args_str) ? request.args_str : template.args_str || null,
    use_jupyter_lab: given(request.use_jupyter_lab) ? request.use_jupyter_lab : template.use_jupyter_lab,
    jupyter_dir: given(request.jupyter_dir) ? request.jupyter_dir : template.jupyter_dir,
    image_login: given(request.image_login) && request.image_login !== '' ? request.image_login : templateImageLogin(template),
    extra_filters,
    volume_info: request.volume_info ?? null,
    docker_login_repo: template.docker_login_repo,
    docker_login_user: template.docker_login_user,
    docker_login_pass: template.docker_login_pass,
    template_id: template.id,
    template_hash_id: template.hash_id,
  } as MergedCreateRequest<R>;
}

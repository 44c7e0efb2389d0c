/**
 * The creation body (spec: Instance creation fields; client-compat: Instance creation), read into one normalised
 * shape. Pure functions: no I/O, no clock. Every user mistake is a 400 `bad_request` naming the field.
 */
import { gunzipSync } from 'node:zlib';
import { badRequest } from '../platform/errors.js';
import { quoteShellWord } from '../protocol/shell-words.js';
import { MAX_VOLUME_NAME_CHARS } from '../volumes/volumes-schemas.js';
import { ONSTART_DECODED_MAX_BYTES, ONSTART_MAX_CHARS } from './instances-constants.js';
import type { VolumeInfo } from './instances-contract.js';

export { ONSTART_DECODED_MAX_BYTES, ONSTART_MAX_CHARS };

/** Spec Limits: default `disk` in GB. (The vastai client sends 10 when the user gives none.) */
export const DEFAULT_DISK_GB = 8;
export const MAX_ENV_ENTRIES = 256;
export const MAX_ENV_VALUE_CHARS = 32 * 1024;
export const MAX_LABEL_CHARS = 256;
export const MAX_IMAGE_CHARS = 512;
/** Ports a container may ask for with `-p` keys. */
export const MAX_PORT_MAPPINGS = 32;

/** Spec runtypes, as stored and shown in `image_runtype`. */
export type Runtype = 'ssh_direct' | 'ssh_proxy' | 'jupyter_direct' | 'jupyter_proxy' | 'args';

/** Container ports each runtype provisions (spec runtype table). */
export const RUNTYPE_PORTS: Record<Runtype, string[]> = {
  ssh_direct: ['22/tcp'],
  ssh_proxy: [],
  jupyter_direct: ['8080/tcp', '22/tcp'],
  jupyter_proxy: [],
  args: [],
};

/** Distinct container ports an instance exposes directly: its runtype's, plus the `-p` mappings of its env. */
export function directPortsWanted(runtype: Runtype, portMaps: readonly string[]): number {
  return new Set([...RUNTYPE_PORTS[runtype], ...portMaps]).size;
}

/**
 * Each GPU of a machine owns an equal slice of its direct port range, so instances on one machine never share a port;
 * a bundle of `numGpus` GPUs can expose that many slices' worth.
 */
export function directPortSlice(machine: { direct_port_count: number; num_gpus: number }): number {
  return Math.floor(machine.direct_port_count / Math.max(1, machine.num_gpus));
}

export function directPortCapacity(machine: { direct_port_count: number; num_gpus: number }, numGpus: number): number {
  return directPortSlice(machine) * numGpus;
}

/** Words a client may put in `runtype` (the vastai client sends `ssh_direc`, `jupyter_direc`). */
const RUNTYPE_WORDS = new Set(['ssh', 'ssh_proxy', 'ssh_direc', 'ssh_direct', 'jupyter', 'jupyter_proxy', 'jupyter_direc', 'jupyter_direct', 'args']);

/**
 * Reads a runtype: one spec value or the client's space-separated list. Jupyter wins over SSH (all Jupyter runtypes
 * include SSH); `direct` wins over `proxy` for the part it names; `args` cannot be combined.
 */
export function parseRuntype(value: string): Runtype {
  const words = value.trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) throw badRequest('body.runtype must not be empty');
  for (const w of words) {
    if (!RUNTYPE_WORDS.has(w)) {
      throw badRequest(`body.runtype: unknown runtype ${JSON.stringify(w)} (ssh_direct, ssh_proxy, ssh, jupyter_direct, jupyter_proxy, jupyter, args)`);
    }
  }
  const has = (...names: string[]) => words.some((w) => names.includes(w));
  if (has('args')) {
    if (words.some((w) => w !== 'args')) throw badRequest('body.runtype: args cannot be combined with ssh or jupyter');
    return 'args';
  }
  if (has('jupyter', 'jupyter_proxy', 'jupyter_direc', 'jupyter_direct')) {
    return has('jupyter_direc', 'jupyter_direct') ? 'jupyter_direct' : 'jupyter_proxy';
  }
  return has('ssh_direc', 'ssh_direct') ? 'ssh_direct' : 'ssh_proxy';
}

/** The `args` list form of runtype args, joined into one shell-quoted `args_str` (the agent's argv: protocol/shell-words.ts). */
export function argsListToString(args: unknown[]): string {
  return args
    .map((a, i) => {
      if (typeof a !== 'string' && typeof a !== 'number') throw badRequest(`body.args[${i}] must be a string`);
      return quoteShellWord(String(a));
    })
    .join(' ');
}

/**
 * `onstart`: up to ONSTART_MAX_CHARS as plain text; a gzip+base64 script (spec) is decoded and used. A long value
 * that is not gzip+base64 is refused.
 */
export function readOnstart(value: string): string {
  const decoded = tryGzipBase64(value);
  if (decoded !== undefined) return decoded;
  if (value.length > ONSTART_MAX_CHARS) {
    throw badRequest(`body.onstart is longer than ${ONSTART_MAX_CHARS} characters; send longer scripts gzip-compressed and base64-encoded`);
  }
  return value;
}

const GZIP_MAGIC = [0x1f, 0x8b];

function tryGzipBase64(value: string): string | undefined {
  const compact = value.replace(/\s+/g, '');
  // Base64 of a gzip stream starts with "H4sI"; anything else is a plain script.
  if (!compact.startsWith('H4sI') || !/^[A-Za-z0-9+/]+={0,2}$/.test(compact)) return undefined;
  const bytes = Buffer.from(compact, 'base64');
  if (bytes[0] !== GZIP_MAGIC[0] || bytes[1] !== GZIP_MAGIC[1]) return undefined;
  let out: Buffer;
  try {
    out = gunzipSync(bytes, { maxOutputLength: ONSTART_DECODED_MAX_BYTES });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      throw badRequest(`body.onstart decodes to more than ${ONSTART_DECODED_MAX_BYTES} bytes`);
    }
    throw badRequest('body.onstart looks gzip+base64-encoded but does not decode');
  }
  return out.toString('utf8');
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** `-p HOST:CONTAINER[/proto]` as the spec's port-mapping key. */
const PORT_KEY = /^-p\s+(?:(\d{1,5}):)?(\d{1,5})(?:\/(tcp|udp))?$/;

export interface ParsedEnv {
  vars: Record<string, string>;
  /** Container ports to provision, e.g. `8081/udp`. */
  ports: string[];
  hostname: string | null;
}

/**
 * Splits an env object into variables, `-p` port mappings (spec: key `-p <host>:<container>`, value "1") and the
 * Docker `-h` hostname. Other `-x` Docker flags have no meaning for a container here and are refused, so that a
 * typo is not silently dropped.
 */
export function parseEnvObject(env: unknown, field = 'body.env'): ParsedEnv {
  if (typeof env !== 'object' || env === null || Array.isArray(env)) {
    throw badRequest(`${field} must be an object of NAME: value (a Docker flag string is not accepted here)`);
  }
  const entries = Object.entries(env as Record<string, unknown>);
  if (entries.length > MAX_ENV_ENTRIES) throw badRequest(`${field} has more than ${MAX_ENV_ENTRIES} entries`);
  const out: ParsedEnv = { vars: {}, ports: [], hostname: null };
  for (const [key, raw] of entries) {
    if (raw !== null && typeof raw !== 'string' && typeof raw !== 'number' && typeof raw !== 'boolean') {
      throw badRequest(`${field}.${key} must be a string`);
    }
    const value = raw === null ? '' : String(raw);
    if (value.length > MAX_ENV_VALUE_CHARS) throw badRequest(`${field}.${key} is longer than ${MAX_ENV_VALUE_CHARS} characters`);
    const port = PORT_KEY.exec(key.trim());
    if (port) {
      const [host, container] = [port[1] === undefined ? undefined : Number(port[1]), Number(port[2])];
      if (container < 1 || container > 65535 || (host !== undefined && (host < 1 || host > 65535))) {
        throw badRequest(`${field}: port out of range in ${JSON.stringify(key)}`);
      }
      const spec = `${container}/${port[3] ?? 'tcp'}`;
      if (!out.ports.includes(spec)) out.ports.push(spec);
      if (out.ports.length > MAX_PORT_MAPPINGS) throw badRequest(`${field}: more than ${MAX_PORT_MAPPINGS} port mappings`);
    } else if (key === '-h' || key === '--hostname') {
      if (!/^[A-Za-z0-9][A-Za-z0-9.-]{0,62}$/.test(value)) throw badRequest(`${field}.${key} must be a host name`);
      out.hostname = value;
    } else if (key.startsWith('-')) {
      throw badRequest(`${field}: unsupported Docker flag ${JSON.stringify(key)} (only -p port mappings and -h are accepted)`);
    } else if (!ENV_NAME.test(key)) {
      throw badRequest(`${field}: invalid variable name ${JSON.stringify(key)}`);
    } else {
      out.vars[key] = value;
    }
  }
  return out;
}

/** `-u <username> -p <access_token> <registry_host>` (spec: image_login). */
export function checkImageLogin(value: string): void {
  if (!/^-u\s+\S+\s+-p\s+\S+(\s+\S+)?\s*$/.test(value.trim())) {
    throw badRequest('body.image_login must be "-u <username> -p <access_token> <registry_host>"');
  }
}

/** Docker image reference: `[registry/]name[:tag][@digest]`. */
export function checkImage(image: string): void {
  if (image.length > MAX_IMAGE_CHARS || !/^[A-Za-z0-9][A-Za-z0-9._\-/:@]*$/.test(image)) {
    throw badRequest('body.image must be a Docker image reference such as pytorch/pytorch:latest');
  }
}

/** Spec `volume_info` shape; `size` is required to create a new volume. */
export function readVolumeInfo(v: unknown): VolumeInfo | null {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'object' || Array.isArray(v)) throw badRequest('body.volume_info must be an object');
  const o = v as Record<string, unknown>;
  if (!Number.isInteger(o.volume_id) || (o.volume_id as number) < 1) throw badRequest('body.volume_info.volume_id must be a positive integer');
  if (typeof o.mount_path !== 'string' || !/^\/[^\0]{0,255}$/.test(o.mount_path)) {
    throw badRequest('body.volume_info.mount_path must be an absolute path');
  }
  // A real host mounts the volume there (issue 33): never over the container's root, nor through `.` or `..`.
  if (o.mount_path.replace(/\/+$/, '') === '' || o.mount_path.split('/').some((part) => part === '.' || part === '..')) {
    throw badRequest('body.volume_info.mount_path must be a directory below / such as /workspace, without . or .. parts');
  }
  const createNew = o.create_new ?? false;
  if (typeof createNew !== 'boolean') throw badRequest('body.volume_info.create_new must be a boolean');
  let size: number | null = null;
  if (createNew) {
    if (typeof o.size !== 'number' || !(o.size > 0)) throw badRequest('body.volume_info.size must be a positive number of GB to create a volume');
    size = o.size;
  }
  if (o.name !== undefined && o.name !== null && (typeof o.name !== 'string' || o.name.length > MAX_VOLUME_NAME_CHARS)) {
    throw badRequest(`body.volume_info.name must be a string of at most ${MAX_VOLUME_NAME_CHARS} characters`);
  }
  return { volume_id: o.volume_id as number, mount_path: o.mount_path, create_new: createNew, size, name: (o.name as string) ?? null };
}

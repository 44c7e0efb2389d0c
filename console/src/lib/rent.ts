/**
 * The rent dialog's logic (tested in test/console-offer-filters.test.ts): environment variables and port mappings as
 * editable rows ⇄ the `env` object of `PUT /api/v0/asks/{id}/` (`{"KEY": "value", "-p 8080:8080": "1"}`, as the CLI's
 * `--env '-e K=V -p 8080:8080'` sends it), a template's env string read into rows, the onstart limit, the body.
 */
import { splitShellWords } from '../../../src/protocol/shell-words.js';

/** spec: Limits, `onstart` length (the server's ONSTART_MAX_CHARS). */
export const ONSTART_LIMIT = 4048;
/** spec: Limits, default `disk`. */
export const DEFAULT_DISK_GB = 8;

export interface EnvRow { key: string; value: string }
export interface PortRow { host: string; container: string; proto: 'tcp' | 'udp' }

export interface RentForm {
  templateHashId: string;
  image: string;
  disk: string;
  env: EnvRow[];
  ports: PortRow[];
  onstart: string;
  label: string;
  /** $/hr, bid rentals only. */
  price: string;
}

const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
const PORT = /^\d{1,5}$/;

export type RentErrors = Partial<Record<'image' | 'disk' | 'env' | 'ports' | 'onstart' | 'price', string>>;

/** `-e K=V -p 8080:8080/udp` (a template's `env`) → rows. Unrecognised words are dropped. */
export function parseEnvString(text: string): { env: EnvRow[]; ports: PortRow[] } {
  const env: EnvRow[] = [];
  const ports: PortRow[] = [];
  // Words as the CLI's `--env` reads them (src/protocol/shell-words.ts): `-e MSG="hello world"` is one value.
  const words = splitShellWords(text);
  for (let i = 0; i < words.length; i++) {
    const w = words[i];
    const next = words[i + 1];
    if (w === '-e' && next) {
      const eq = next.indexOf('=');
      if (eq > 0) env.push({ key: next.slice(0, eq), value: next.slice(eq + 1) });
      i++;
    } else if (w === '-p' && next) {
      const m = /^(\d+):(\d+)(?:\/(tcp|udp))?$/.exec(next);
      if (m) ports.push({ host: m[1], container: m[2], proto: (m[3] as 'tcp' | 'udp' | undefined) ?? 'tcp' });
      i++;
    }
  }
  return { env, ports };
}

/** Rows → the `env` object; errors name the row. */
export function envObject(env: EnvRow[], ports: PortRow[]): { env: Record<string, string>; errors: RentErrors } {
  const out: Record<string, string> = {};
  const errors: RentErrors = {};
  env.forEach((r, i) => {
    if (r.key === '' && r.value === '') return;
    if (!ENV_KEY.test(r.key)) errors.env ??= `variable ${i + 1}: "${r.key}" is not a name (letters, digits, _; not starting with a digit)`;
    else out[r.key] = r.value;
  });
  ports.forEach((p, i) => {
    if (p.host === '' && p.container === '') return;
    const ok = PORT.test(p.host) && PORT.test(p.container) && +p.host >= 1 && +p.host <= 65535 && +p.container >= 1 && +p.container <= 65535;
    if (!ok) errors.ports ??= `port ${i + 1}: both ports must be numbers from 1 to 65535`;
    else out[`-p ${p.host}:${p.container}${p.proto === 'udp' ? '/udp' : ''}`] = '1';
  });
  return { env: out, errors };
}

/** The body of the rent request, or the errors to show beside the fields. */
export function rentBody(f: RentForm, bid: boolean): { body: Record<string, unknown>; errors: null } | { body: null; errors: RentErrors } {
  const { env, errors } = envObject(f.env, f.ports);
  if (!f.templateHashId && f.image.trim() === '') errors.image = 'an image is required (or pick a template)';
  const disk = Number(f.disk);
  if (f.disk.trim() === '' || !Number.isFinite(disk) || disk <= 0) errors.disk = 'disk must be a number of GB above 0';
  if (f.onstart.length > ONSTART_LIMIT) errors.onstart = `onstart is ${f.onstart.length} characters; the limit is ${ONSTART_LIMIT}`;
  const price = Number(f.price);
  if (bid && (f.price.trim() === '' || !Number.isFinite(price) || price <= 0)) errors.price = 'a bid needs a price in $/hr above 0';
  if (Object.keys(errors).length) return { body: null, errors };
  const body: Record<string, unknown> = { disk, runtype: 'ssh' };
  if (f.templateHashId) body.template_hash_id = f.templateHashId;
  if (f.image.trim()) body.image = f.image.trim();
  if (Object.keys(env).length) body.env = env;
  if (f.onstart) body.onstart = f.onstart;
  if (f.label.trim()) body.label = f.label.trim();
  if (bid) body.price = price;
  return { body, errors: null };
}

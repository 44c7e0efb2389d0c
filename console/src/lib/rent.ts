/**
 * The rent dialog's logic (tested in test/console-offer-filters.test.ts and test/console-rent.test.ts): the launch
 * mode (spec: Runtype values) and the fields each mode takes, environment variables and port mappings as editable rows
 * ⇄ the `env` object of `PUT /api/v0/asks/{id}/` (`{"KEY": "value", "-p 8080:8080": "1"}`, as the CLI's
 * `--env '-e K=V -p 8080:8080'` sends it), a template's env string and launch mode read into the form, the onstart
 * limit, the body.
 */
import { splitShellWords } from '../../../src/protocol/shell-words.js';

/** spec: Limits, `onstart` length (the server's ONSTART_MAX_CHARS). */
export const ONSTART_LIMIT = 4048;
/** spec: Limits, default `disk`. */
export const DEFAULT_DISK_GB = 8;
/** The server's longest `jupyter_dir` (src/instances/instances-schemas.ts). */
export const JUPYTER_DIR_LIMIT = 1024;

/**
 * The launch modes the dialog offers: the spec's runtypes, sent as they are named there (the aliases `ssh` and
 * `jupyter` are the proxy forms, so they are not offered twice).
 */
export type LaunchMode = 'ssh_proxy' | 'ssh_direct' | 'jupyter_proxy' | 'jupyter_direct' | 'args';

export const LAUNCH_MODES: readonly { value: LaunchMode; label: string; hint: string }[] = [
  { value: 'ssh_proxy', label: 'SSH (proxy)', hint: 'SSH through the server: the host needs no open port.' },
  { value: 'ssh_direct', label: 'SSH (direct)', hint: "SSH to the host's own address, on one of its direct ports." },
  { value: 'jupyter_proxy', label: 'Jupyter (proxy)', hint: 'Jupyter on a URL through the server, and SSH.' },
  { value: 'jupyter_direct', label: 'Jupyter (direct)', hint: "Jupyter on the host's own address and port, and SSH." },
  { value: 'args', label: 'Command', hint: "The image's own entrypoint with your arguments: no SSH, no Jupyter, no on-start script." },
];

export const isJupyterMode = (m: LaunchMode): boolean => m === 'jupyter_proxy' || m === 'jupyter_direct';
export const isDirectMode = (m: LaunchMode): boolean => m === 'ssh_direct' || m === 'jupyter_direct';

export interface EnvRow { key: string; value: string }
export interface PortRow { host: string; container: string; proto: 'tcp' | 'udp' }

export interface RentForm {
  templateHashId: string;
  image: string;
  disk: string;
  env: EnvRow[];
  ports: PortRow[];
  mode: LaunchMode;
  /** SSH and Jupyter modes: run after the service's entrypoint. */
  onstart: string;
  /** Jupyter modes: JupyterLab instead of the Notebook. */
  jupyterLab: boolean;
  /** Jupyter modes: where Jupyter starts (empty: the image's working directory). */
  jupyterDir: string;
  /** Command mode: the arguments, as a shell line (`args_str`). */
  args: string;
  label: string;
  /** $/hr, bid rentals only. */
  price: string;
}

/** A fresh form: SSH through the proxy, what the dialog rented before it offered a choice. */
export function emptyForm(bidPrice = ''): RentForm {
  return {
    templateHashId: '', image: '', disk: String(DEFAULT_DISK_GB), env: [], ports: [], mode: 'ssh_proxy', onstart: '',
    jupyterLab: false, jupyterDir: '', args: '', label: '', price: bidPrice,
  };
}

const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
const PORT = /^\d{1,5}$/;

export type RentErrors = Partial<Record<'image' | 'disk' | 'env' | 'ports' | 'mode' | 'onstart' | 'jupyterDir' | 'args' | 'price', string>>;

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

/**
 * A template's launch mode (spec: Template `runtype` is `ssh`, `jupyter` or `args`, with `ssh_direct`/`jup_direct`),
 * as the server reads it when it merges the template (src/templates/templates-contract.ts `templateRuntype`).
 */
export function templateMode(t: { runtype?: string | null; ssh_direct?: boolean | null; jup_direct?: boolean | null }): LaunchMode {
  if (t.runtype === 'jupyter') return t.jup_direct ? 'jupyter_direct' : 'jupyter_proxy';
  if (t.runtype === 'ssh') return t.ssh_direct ? 'ssh_direct' : 'ssh_proxy';
  return 'args';
}

/**
 * Where a quote of a shell line is left open, or null: the server reads an open quote as running to the end of the
 * line (src/protocol/shell-words.ts), which is seldom what was meant, so the dialog asks for it to be closed.
 */
export function openQuote(s: string): '"' | "'" | null {
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '\\') i++;
    else if (c === "'") {
      const end = s.indexOf("'", i + 1);
      if (end < 0) return "'";
      i = end;
    } else if (c === '"') {
      i++;
      while (i < s.length && s[i] !== '"') i += s[i] === '\\' ? 2 : 1;
      if (i >= s.length) return '"';
    }
  }
  return null;
}

/** The container's arguments as the agent will pass them (one entry per word), to show before renting. */
export function argsWords(s: string): string[] {
  return splitShellWords(s);
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

/**
 * The body of the rent request (spec: Instance creation fields), or the errors to show beside the fields. The
 * runtype is always sent by its spec name; each mode sends only the fields the spec says it uses: `onstart` for SSH
 * and Jupyter, `use_jupyter_lab`/`jupyter_dir` for Jupyter, `args_str` for `args` (whose entrypoint is the image's,
 * so an onstart would not run). `directPorts`: the offer's `direct_port_count`, when known.
 */
export function rentBody(f: RentForm, bid: boolean, directPorts?: number): { body: Record<string, unknown>; errors: null } | { body: null; errors: RentErrors } {
  const { env, errors } = envObject(f.env, f.ports);
  if (!f.templateHashId && f.image.trim() === '') errors.image = 'an image is required (or pick a template)';
  const disk = Number(f.disk);
  if (f.disk.trim() === '' || !Number.isFinite(disk) || disk <= 0) errors.disk = 'disk must be a number of GB above 0';
  if (!LAUNCH_MODES.some((m) => m.value === f.mode)) errors.mode = 'pick a launch mode';
  else if (isDirectMode(f.mode) && directPorts === 0) {
    errors.mode = 'this offer has no direct ports, which a direct mode needs: pick SSH (proxy) or Jupyter (proxy), or another offer';
  }
  const jupyter = isJupyterMode(f.mode);
  const jupyterDir = f.jupyterDir.trim();
  if (f.mode !== 'args' && f.onstart.length > ONSTART_LIMIT) errors.onstart = `onstart is ${f.onstart.length} characters; the limit is ${ONSTART_LIMIT}`;
  if (jupyter && jupyterDir !== '' && !jupyterDir.startsWith('/')) errors.jupyterDir = 'the Jupyter directory must be an absolute path, such as /workspace';
  else if (jupyter && jupyterDir.length > JUPYTER_DIR_LIMIT) errors.jupyterDir = `the Jupyter directory is ${jupyterDir.length} characters; the limit is ${JUPYTER_DIR_LIMIT}`;
  const quote = f.mode === 'args' ? openQuote(f.args) : null;
  if (quote) errors.args = `the arguments leave a ${quote === '"' ? 'double' : 'single'} quote open: close it (or escape it with \\)`;
  const price = Number(f.price);
  if (bid && (f.price.trim() === '' || !Number.isFinite(price) || price <= 0)) errors.price = 'a bid needs a price in $/hr above 0';
  if (Object.keys(errors).length) return { body: null, errors };
  const body: Record<string, unknown> = { disk, runtype: f.mode };
  if (f.templateHashId) body.template_hash_id = f.templateHashId;
  if (f.image.trim()) body.image = f.image.trim();
  if (Object.keys(env).length) body.env = env;
  if (f.mode !== 'args' && f.onstart) body.onstart = f.onstart;
  if (jupyter) {
    body.use_jupyter_lab = f.jupyterLab;
    if (jupyterDir) body.jupyter_dir = jupyterDir;
  }
  if (f.mode === 'args' && f.args.trim()) body.args_str = f.args.trim();
  if (f.label.trim()) body.label = f.label.trim();
  if (bid) body.price = price;
  return { body, errors: null };
}

/**
 * `create instance` arguments as the vastai client reads them: the Docker-style `--env` string becomes the spec's env
 * object, and `--ssh`/`--jupyter`/`--direct`/`--args` become a runtype. Unlike that client, a token it would silently
 * drop is an error here.
 */
import type { Command } from 'commander';
import { splitShellWords } from '../protocol/shell-words.js';
import { UsageError } from './context.js';

const PORT = /^\d{1,5}(:\d{1,5})?(\/(tcp|udp))?$/;

/**
 * `-e TZ=UTC -p 8080:8080 -p 8081:8081/udp -h myhost` → `{TZ: "UTC", "-p 8080:8080": "1", "-p 8081:8081/udp": "1",
 * "-h": "myhost"}` (client-compat: the env object).
 */
export function parseEnv(text: string | undefined): Record<string, string> | null {
  if (text === undefined) return null;
  const env: Record<string, string> = {};
  // The console's rent dialog reads a template's env string by the same rule.
  const words = splitShellWords(text);
  for (let i = 0; i < words.length; i++) {
    const flag = words[i];
    const value = words[i + 1];
    if (!['-e', '-p', '-h', '-v', '-n'].includes(flag)) {
      throw new UsageError(`--env: expected -e NAME=VALUE, -p HOST:CONTAINER, -h HOST, -v or -n, got ${JSON.stringify(flag)}`);
    }
    if (value === undefined) throw new UsageError(`--env: ${flag} needs a value`);
    i++;
    if (flag === '-e') {
      const eq = value.indexOf('=');
      if (eq < 1) throw new UsageError(`--env: -e ${value}: expected NAME=VALUE`);
      env[value.slice(0, eq)] = value.slice(eq + 1);
    } else if (flag === '-p') {
      if (!PORT.test(value)) throw new UsageError(`--env: -p ${value}: expected HOST:CONTAINER[/tcp|/udp]`);
      env[`-p ${value}`] = '1';
    } else if (flag === '-v') env[`-v ${value}`] = '1';
    else env[flag] = value;
  }
  return env;
}

export interface RuntypeFlags {
  ssh?: boolean;
  jupyter?: boolean;
  direct?: boolean;
  jupyterDir?: string;
  jupyterLab?: boolean;
  args?: string[];
}

/** vastai's get_runtype: the space-separated runtype list the client sends (client-compat). */
export function runtypeOf(o: RuntypeFlags): string {
  const jupyter = o.jupyter || o.jupyterDir !== undefined || o.jupyterLab;
  if (jupyter && o.args !== undefined) throw new UsageError("--jupyter and --args cannot go together: use --onstart-cmd to run a command");
  if (o.ssh && o.args !== undefined) throw new UsageError("--ssh and --args cannot go together: use --onstart-cmd to run a command");
  // As vastai: --ssh wins over --jupyter.
  if (o.ssh) return o.direct ? 'ssh_direc ssh_proxy' : 'ssh_proxy';
  if (jupyter) return o.direct ? 'jupyter_direc ssh_direc ssh_proxy' : 'jupyter_proxy ssh_proxy';
  if (o.args !== undefined) return 'args';
  return 'ssh';
}

/** Cuts `--args …` (everything after it, options included) off argv, as the vastai client's REMAINDER does. */
export function splitRemainder(argv: string[], flag = '--args'): { head: string[]; rest: string[] | undefined } {
  const at = argv.indexOf(flag);
  return at === -1 ? { head: argv, rest: undefined } : { head: argv.slice(0, at), rest: argv.slice(at + 1) };
}

/** The options of what an instance runs, shared by `create instance` and `launch instance`. */
export function containerOptions(cmd: Command): Command {
  return cmd
    .option('--template_hash <hash>', 'create from this template (its hash_id)')
    .option('--env <flags>', 'env and ports, Docker style: "-e TZ=UTC -p 8080:8080 -h myhost"')
    .option('--label <label>', 'a label for the instance')
    .option('--onstart <file>', 'file whose contents run at start')
    .option('--onstart-cmd <script>', 'shell commands run at start')
    .option('--entrypoint <cmd>', 'used as onstart when no --onstart-cmd is given')
    .option('--login <args>', 'registry login for a private image: "-u USER -p TOKEN registry.host"')
    .option('--ssh', 'SSH instance')
    .option('--jupyter', 'Jupyter instance (includes SSH)')
    .option('--direct', 'direct (not proxied) SSH/Jupyter connections')
    .option('--jupyter-dir <dir>', 'directory to start Jupyter from')
    .option('--jupyter-lab', 'JupyterLab instead of Notebook')
    .option('--lang-utf8', 'set the locale to C.UTF-8')
    .option('--python-utf8', 'set Python’s locale to C.UTF-8');
}

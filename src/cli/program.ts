/** The `gpuplane` command line: global options, help, and every command group. */
import { Command, CommanderError } from 'commander';
import { EXIT } from './context.js';
import { registerAccount } from './commands/account.js';
import { registerEmulator } from './commands/emulator.js';
import { registerOffers } from './commands/offers.js';
import { registerTemplates } from './commands/templates.js';
import { registerEnvVars } from './commands/env-vars.js';
import { registerKeys } from './commands/keys.js';
import { registerMachines } from './commands/machines.js';
import { registerBilling } from './commands/billing.js';
import { registerPayments } from './commands/payments.js';
import { registerAudit } from './commands/audit.js';
import { registerTfa } from './commands/tfa.js';
import { registerInstances } from './commands/instances.js';
import { registerInstanceExtras } from './commands/instance-extras.js';
import { splitRemainder } from './instance-args.js';
import { registerAutoscaler } from './commands/serverless-autoscaler.js';
import { registerServerless } from './commands/serverless.js';
import { registerDeployments } from './commands/deployments.js';
import { registerSession } from './commands/session.js';
import { registerAgent } from './commands/agent.js';
import { registerScheduledJobs } from './commands/scheduled-jobs.js';
import { registerSubaccounts } from './commands/subaccounts.js';
import { registerDeposits } from './commands/deposits.js';
import { registerLaunch } from './commands/launch.js';
import { registerBenchmarks } from './commands/benchmarks.js';
import { registerClusters } from './commands/clusters.js';
import { registerNetwork } from './commands/network.js';
import { bindRun, CliRun, processIO, type CliIO } from './io.js';
import { fitHelpText, helpLayout, helpWidth } from './help-layout.js';
import pkg from '../../package.json' with { type: 'json' };

// Wrapped by hand to 80 columns (Commander does not wrap this text), the width of help in a pipe, so that it reads
// on any terminal at least that wide (issue 29 item 10).
const OVERVIEW = `
Client options may also come from the environment: GPUPLANE_URL,
GPUPLANE_API_KEY. Without either, the key saved by \`gpuplane set api-key KEY\` is
used (in $XDG_CONFIG_HOME/gpuplane/ or ~/.config/gpuplane/).

Tables fit the terminal's width (COLUMNS overrides it; no limit when the output
is not a terminal), leaving out the least useful columns; --columns chooses them
(also -o, except on search commands, where -o is --order).

Exit codes: 0 success, 1 the server refused or could not be reached (its
message is printed), 2 a usage error (unknown option, malformed query; nothing
was sent), 3 the instance failed while waiting (exited, unknown, offline), 4 a
wait timed out, 130 interrupted (Ctrl-C; a wait prints how to resume it).

Examples:
  gpuplane serve --clock virtual
  gpuplane set api-key gpk_...
  gpuplane search offers 'num_gpus>=2 geolocation in [US,CA]' -o dph_total
  gpuplane create instance 1234 --image pytorch/pytorch --disk 40 --ssh --wait
  gpuplane show instances --raw
`;

/** The whole command tree; its output (help, usage errors) goes to `io`. */
export function buildProgram(io: CliIO = processIO()): Command {
  const program = new Command('gpuplane')
    // Before any subcommand is added: each copies it when created.
    .configureOutput({
      // Only help, usage errors and the version come through here (commands write to the run's streams): the texts
      // commands add to their help by hand are wrapped to the width the rest of the help fits. Error lines are left
      // whole (scripts match them).
      writeOut: (s) => void io.stdout.write(fitHelpText(s, helpWidth(io.stdout))),
      writeErr: (s) => void io.stderr.write(s.startsWith('Usage:') ? fitHelpText(s, helpWidth(io.stderr)) : s),
      // Commander's defaults, on the run's streams: the terminal's width, else its own (80).
      getOutHelpWidth: () => helpWidth(io.stdout),
      getErrHelpWidth: () => helpWidth(io.stderr),
    })
    // Also copied into each subcommand: the term column capped, so descriptions keep room to read (help-layout.ts).
    .configureHelp(helpLayout)
    .description('gpuplane: a GPU cloud control plane and local GPU-cloud emulator. `gpuplane serve` runs the server; every other command is a client of one.')
    .option('--url <url>', 'server URL (env GPUPLANE_URL, default http://127.0.0.1:8080)')
    .option('--api-key <key>', 'API key (env GPUPLANE_API_KEY, or the key saved by `gpuplane set api-key`)')
    .option('--raw', 'print JSON replies, for scripts')
    .version(pkg.version, '-V, --version', 'print the version of gpuplane')
    .showHelpAfterError('(add --help for usage)')
    .addHelpText('after', OVERVIEW)
    .exitOverride();
  // `serve` is dispatched in main.ts before Commander runs (it has its own flags); listed here for --help only.
  program.command('serve').description('start the server (`gpuplane serve --help` lists its flags)').addHelpText('after', '\nExample:\n  gpuplane serve --port 9000 --clock virtual');
  // `admin` is dispatched in main.ts too: it opens the server's database directly.
  program.command('admin').description('on the server\'s machine: `gpuplane admin create-key` makes a new admin API key (a lost owner key)')
    .addHelpText('after', '\nExample:\n  gpuplane admin create-key --database-url sqlite:./data/gpuplane.db');

  // One command per verb; features add their nouns under it (`destroy instance`, `destroy team`).
  const verbs = new Map<string, Command>();
  const verb = (name: string, what: string): Command => {
    let c = verbs.get(name);
    if (!c) verbs.set(name, (c = program.command(name).description(what)));
    return c;
  };
  const groups: Groups = {
    set: verb('set', 'save client settings: api-key'),
    show: verb('show', 'show: user, instances, instance, snapshots, ssh-keys, env-vars, invoices, audit-logs, ipaddrs, connections, api-keys, charges, members, team-roles, volumes, endpoints, workergroups, deployments, deployment, deployment-versions, scheduled-jobs, subaccounts, sessions'),
    search: verb('search', 'search offers, templates, volumes or invoices with a query'),
    create: verb('create', 'create: instance, template, ssh-key, env-var, api-key, team, team-role, volume, endpoint, workergroup, account, scheduled-job, subaccount'),
    update: verb('update', 'change: instance, template, ssh-key, env-var, team-role, endpoint, workergroup, workers, scheduled-job'),
    delete: verb('delete', 'delete: template, ssh-key, env-var, api-key, volume, endpoint, workergroup, deployment, scheduled-job, session'),
    emu: verb('emu', 'drive the emulator (emulator mode, admin key): clock, advance, create-user, outbox, fault, credit, add-machine, load, reset, seed, save, restore, request-fault, event, transitions, advance-instance, replay'),
  };
  registerAccount(program, groups);
  registerOffers(groups.search);
  registerTemplates(groups);
  registerEnvVars(groups);
  registerKeys(groups, verb);
  registerInstances(program, verb);
  registerInstanceExtras(program, verb);
  registerBilling(groups.show);
  registerPayments(groups, verb);
  registerAudit(groups);
  registerServerless(groups);
  registerAutoscaler(verb);
  registerDeployments(groups, verb);
  registerTfa(program);
  registerSession(program, verb);
  registerEmulator(groups.emu);
  registerAgent(program);
  registerMachines(program, groups, verb);
  registerScheduledJobs(groups);
  registerSubaccounts(groups);
  registerDeposits(groups, verb);
  registerLaunch(groups, verb);
  registerBenchmarks(groups.search, groups.emu);
  registerClusters(program, groups, verb);
  registerNetwork(groups, verb);
  return program;
}

export type Groups = Record<'set' | 'show' | 'search' | 'create' | 'update' | 'delete' | 'emu', Command>;

/**
 * Runs the CLI on `argv` (the words after `gpuplane`) and resolves to its exit code: usage errors 2, --help and
 * --version 0. It never exits the process: main.ts does, with this code.
 */
export async function runCli(argv: string[], io: CliIO = processIO()): Promise<number> {
  const program = buildProgram(io);
  // `create instance … --args …` takes every word after --args verbatim, options included (as the vastai client).
  const split = (argv.includes('create') || argv.includes('launch')) && argv.includes('instance') ? splitRemainder(argv) : { head: argv, rest: undefined };
  const run = new CliRun(io, split.rest);
  bindRun(program, run);
  try {
    await program.parseAsync(split.head, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : EXIT.usage;
    throw err;
  }
  return run.exitCode;
}

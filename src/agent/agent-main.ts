/**
 * `gpuplane agent` as a process: settings, a JSON log on stdout, the Docker runtime, and the signals. Exit codes as
 * the CLI's: 0 stopped by a signal, 1 could not start or had to stop (the reason on stderr), 2 a usage error. The
 * code is set on `process.exitCode` and returned: the CLI exits with its run's code (cli/main.ts), so the command
 * hands it on.
 */
import pino from 'pino';
import pkg from '../../package.json' with { type: 'json' };
import { startAgent } from './agent.js';
import { REDACT_PATHS, type AgentLog } from './agent-log.js';
import { agentSettings, AgentUsageError, type AgentFlags } from './agent-options.js';
import { realSystem } from './agent-system.js';
import { createDockerClient, createDockerRuntime } from './docker-runtime.js';
import { createAgentDataPlane, StreamRefusal } from './agent-data-plane.js';
import { TunnelRefusal } from './agent-tunnel.js';
import type { AgentDataPlaneContext, AgentDeps } from './agent.js';

const EXIT_ERROR = 1;
const EXIT_USAGE = 2;

export async function runAgent(flags: AgentFlags): Promise<number> {
  await agentProcess(flags);
  return Number(process.exitCode ?? 0);
}

async function agentProcess(flags: AgentFlags): Promise<void> {
  let settings;
  try {
    settings = agentSettings(flags, process.env, process.getuid?.() === 0);
  } catch (err) {
    if (!(err instanceof AgentUsageError)) throw err;
    process.stderr.write(`gpuplane agent: ${err.message}\n`);
    process.exitCode = EXIT_USAGE;
    return;
  }
  const log: AgentLog = pino(
    { name: 'gpuplane-agent', level: settings.logLevel, redact: { paths: REDACT_PATHS, censor: '[redacted]' } },
    pino.destination({ dest: 1, sync: true }),
  );
  let agent;
  try {
    const docker = createDockerClient();
    agent = await startAgent({ ...settings.config, agentVersion: pkg.version }, {
      runtime: createDockerRuntime({}, docker, { allowUnlimitedDisk: settings.config.allowUnlimitedDisk }),
      system: realSystem,
      log,
      dataPlane: dockerDataPlane(docker),
    });
  } catch (err) {
    process.stderr.write(`gpuplane agent: ${(err as Error).message}\n`);
    process.exitCode = EXIT_ERROR;
    return;
  }
  log.info({ machine_id: agent.machineId }, 'agent running');
  const onSignal = (signal: string) => {
    log.info({ signal }, 'stopping; containers keep running');
    void agent.stop();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    await agent.done;
  } catch (err) {
    process.stderr.write(`gpuplane agent: ${(err as Error).message}\n`);
    process.exitCode = EXIT_ERROR;
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}

/**
 * The data plane over the agent's Docker client: the instances' keys from the latest desired state, and on every new
 * desired state the open sessions and the containers' authorized_keys follow attach and detach (agent-data-plane.ts).
 */
export function dockerDataPlane(docker: ReturnType<typeof createDockerClient>): NonNullable<AgentDeps['dataPlane']> {
  return (ctx: AgentDataPlaneContext) => {
    const plane = createAgentDataPlane({
      docker,
      owner: { machineId: ctx.machineId, owner: ctx.owner },
      stateDir: ctx.stateDir,
      instances: () => new Map(ctx.desired().map((d) => [d.instance_id, { sshKeys: d.ssh_keys, runtype: d.runtype }])),
      log: ctx.log,
    });
    ctx.onDesired(() => {
      plane.keysChanged().catch((err: Error) => ctx.log.warn({ err: err.message }, 'cannot bring the containers\' SSH keys up to date; retrying with the next desired state'));
    });
    return {
      // The data plane's refusal is the tunnel's (the stream's status and reason).
      handle: (target, stream, info) => plane.handle(target, stream, info).catch((err: unknown) => {
        throw err instanceof StreamRefusal ? new TunnelRefusal(err.status, err.reason) : err;
      }),
      close: () => plane.close(),
    };
  };
}

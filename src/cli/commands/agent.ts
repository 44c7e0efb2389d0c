/**
 * `gpuplane agent`: runs the machine agent on a GPU host (src/agent/, docs/AGENT-PROTOCOL.md). Its code loads only
 * when the command runs, so the client commands start as fast as before.
 */
import type { Command } from 'commander';
import { runOf } from '../io.js';

export function registerAgent(program: Command): void {
  program
    .command('agent')
    .description('run the machine agent on a GPU host: registers it, then runs the instances placed on it as containers')
    .option('--state-dir <dir>', 'where the machine credential is kept (env GPUPLANE_AGENT_STATE_DIR; default /var/lib/gpuplane-agent as root)')
    .option('--runtime <name>', 'container runtime: docker (env GPUPLANE_AGENT_RUNTIME)')
    .option('--hardware <file>', 'declare the hardware in a JSON file of offer fields instead of discovering it (env GPUPLANE_AGENT_HARDWARE)')
    .option('--public-ip <ip>', 'the address renters connect to (env GPUPLANE_AGENT_PUBLIC_IP; default the first non-loopback IPv4)')
    .option('--port-range <lo-hi>', 'host ports for published container ports (env GPUPLANE_AGENT_PORT_RANGE; default 40000-40999)')
    .option('--publish-ip <ip>', 'address the container ports are bound on (env GPUPLANE_AGENT_PUBLISH_IP; default 0.0.0.0)')
    .option('--heartbeat-interval <s>', 'seconds between status reports unless the server says (env GPUPLANE_AGENT_HEARTBEAT_INTERVAL; default 10)')
    .option('--gpu-telemetry-interval <s>', 'seconds between GPU samples (nvidia-smi, kernel Xid lines); 0: off (env GPUPLANE_AGENT_GPU_TELEMETRY_INTERVAL; default 10)')
    .option('--resync-interval <s>', 'seconds between full reconcile passes (env GPUPLANE_AGENT_RESYNC_INTERVAL; default 30)')
    .option('--pids-limit <n>', 'processes and threads per container (env GPUPLANE_AGENT_PIDS_LIMIT; default 4096)')
    .option('--log-max-size <mib>', 'a container log rotates at this size, MiB (env GPUPLANE_AGENT_LOG_MAX_SIZE; default 50)')
    .option('--log-max-files <n>', 'rotated log files kept per container (env GPUPLANE_AGENT_LOG_MAX_FILES; default 3)')
    .option('--no-host-firewall', 'do not install the rule that keeps containers off this host\'s services (env GPUPLANE_AGENT_HOST_FIREWALL=off; docs/HOST-SECURITY.md)')
    .option('--allow-unlimited-disk', 'run where the storage driver cannot limit a container\'s disk (overlay2 on ext4): offered with disk_limit false (env GPUPLANE_AGENT_ALLOW_UNLIMITED_DISK=on)')
    .option('--log-level <level>', 'fatal, error, warn, info, debug, trace or silent (env GPUPLANE_LOG_LEVEL; default info)')
    .addHelpText('after', `
The first start registers the machine with the host account's API key (--api-key or GPUPLANE_API_KEY) and keeps
the machine's own credential in the state directory; later starts need no key. The server URL comes from --url or
GPUPLANE_URL (saved at registration). The Docker daemon is found as Docker's own tools find it (DOCKER_HOST).

Example:
  gpuplane agent --url https://gpuplane.example.com --api-key gpk_... --public-ip 203.0.113.7 --port-range 40000-40999`)
    .action(async (_opts: unknown, cmd: Command) => {
      const { runAgent } = await import('../../agent/agent-main.js');
      // The CLI exits with the run's code, not process.exitCode: a start that failed exits 1, as documented.
      runOf(cmd).exitCode = await runAgent(cmd.optsWithGlobals());
    });
}

/**
 * Whether a `jupyter` instance's image has Jupyter (issue 32): the entrypoint starts it only when `jupyter` is on the
 * image's PATH (container-spec.ts `jupyterLines`), and without one the renter is told in the instance's `status_msg`
 * instead of finding nothing on port 8080. The agent asks the running container once, with the entrypoint's own test
 * (`command -v jupyter`, under the same environment: an exec runs with the container's), and the status report carries
 * the answer as `jupyter_missing`. Asked again for each container and each start (`boot`): a recreated container may
 * hold another image.
 */
import type { DesiredInstanceT, ObservedInstanceT } from '../protocol/agent-protocol-schemas.js';
import type { AgentLog } from './agent-log.js';
import type { ContainerRuntime } from './runtime.js';

/** The entrypoint's own test for Jupyter, run in the container. */
export const JUPYTER_PROBE_ARGV: readonly string[] = Object.freeze(['/bin/sh', '-c', 'command -v jupyter >/dev/null 2>&1']);
/** An answer that takes longer (a container under heavy load) is asked again with the next report. */
const PROBE_TIMEOUT_S = 10;

export interface JupyterProbeDeps {
  runtime: Pick<ContainerRuntime, 'exec'>;
  log: AgentLog;
  /** An image turned out to lack Jupyter: the next report should say so now rather than at the next heartbeat. */
  onMissing(): void;
}

export function createJupyterProbe({ runtime, log, onMissing }: JupyterProbeDeps) {
  /** `<container id>/<boot>` → whether Jupyter is missing. */
  const answers = new Map<string, boolean>();
  const asking = new Set<string>();

  async function ask(key: string, containerId: string, instanceId: number): Promise<void> {
    if (asking.has(key)) return;
    asking.add(key);
    try {
      const r = await runtime.exec(containerId, [...JUPYTER_PROBE_ARGV], { maxChars: 256, timeoutS: PROBE_TIMEOUT_S });
      if (r.timedOut || r.exitCode === null) return;
      const missing = r.exitCode !== 0;
      answers.set(key, missing);
      if (missing) {
        log.info({ instance_id: instanceId }, 'the image has no jupyter on its PATH: reported in the instance\'s status');
        onMissing();
      }
    } catch {
      // Stopped meanwhile, or the runtime failed: asked again with the next report.
    } finally {
      asking.delete(key);
    }
  }

  return {
    /**
     * The observed state with `jupyter_missing` on each running `jupyter` instance whose image lacks Jupyter. Asks the
     * containers not asked yet (the answer comes with a later report), and forgets those no longer running.
     */
    annotate(observed: readonly ObservedInstanceT[], desired: readonly DesiredInstanceT[]): ObservedInstanceT[] {
      const jupyter = new Set(desired.filter((d) => d.runtype === 'jupyter').map((d) => d.instance_id));
      const live = new Set<string>();
      const out = observed.map((o) => {
        if (o.state !== 'running' || o.container_id === null || !jupyter.has(o.instance_id)) return o;
        const key = `${o.container_id}/${o.boot}`;
        live.add(key);
        const missing = answers.get(key);
        if (missing === undefined) void ask(key, o.container_id, o.instance_id);
        return missing === true ? { ...o, jupyter_missing: true } : o;
      });
      for (const key of answers.keys()) if (!live.has(key)) answers.delete(key);
      return out;
    },
  };
}

export type JupyterProbe = ReturnType<typeof createJupyterProbe>;

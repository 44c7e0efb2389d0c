/**
 * What a simulated host sends for `request_logs`: it has no container to log anything, so its log is the boot as the
 * instance's history tells it (instance_events), one line per step.
 */
import type { InstanceEventRow, InstanceRow } from '../../instances/instances-hosts-contract.js';

/** `1 GPU`, `2 GPUs`: a count and its noun, singular for one. */
const counted = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

/**
 * The simulated boot log: each line says what the host's report said at that step, in the order it happened. A
 * `loading` step's own message says whether the image is still being pulled or the container is starting (issue 29
 * item 9: "image downloaded, starting container (pulling the image)" claimed both at once). Nothing is claimed of the
 * instance key: the server keeps only its hash and never hands it to the host, so no container receives it.
 */
export function bootLog(inst: InstanceRow, events: Pick<InstanceEventRow, 'actual_status' | 'status_msg' | 'at'>[]): string[] {
  const ts = (t: number) => new Date(t * 1000).toISOString();
  const lines = [`${ts(inst.created_at)} instance ${inst.id} created on machine ${inst.machine_id ?? '?'} (${counted(inst.num_gpus, 'GPU')}), image ${inst.image}`];
  for (const e of events) {
    const note = e.status_msg ? ` (${e.status_msg})` : '';
    if (e.actual_status === null) lines.push(`${ts(e.at)} provisioning: waiting for the host to take it${note}`);
    else if (e.actual_status === 'loading') lines.push(`${ts(e.at)} loading: ${e.status_msg ?? 'preparing the container'}`);
    else if (e.actual_status === 'running') {
      lines.push(`${ts(e.at)} running: container started (${inst.runtype})`);
      if (inst.onstart) lines.push(`${ts(e.at)} onstart: running its script (${counted(inst.onstart.split('\n').length, 'line')})`);
    } else lines.push(`${ts(e.at)} ${e.actual_status}${note}`);
  }
  return lines;
}

/**
 * The renters' one-off requests listed in the desired state (docs/AGENT-PROTOCOL.md §2): `execute` commands and
 * snapshots. Each is done once (a request is listed until answered, so every desired-state reply names it again) and
 * answered; a failed answer is retried with the next reply. Neither changes the reconcile's containers.
 */
import { COMMAND_OUTPUT_MAX_CHARS, type CommandRequestT, type DesiredInstanceT, type SnapshotRequestT } from '../protocol/agent-protocol-schemas.js';
import type { GpuplaneClient } from '../sdk/client.js';
import { GpuplaneError } from '../sdk/errors.js';
import type { AgentLog } from './agent-log.js';
import { containersByInstance } from './reconcile-plan.js';
import type { ContainerOwner, ContainerRuntime, RuntimeContainer } from './runtime.js';

/** A command running longer is cut off: its output so far is the answer, with a note. */
export const COMMAND_TIMEOUT_S = 60;

export interface RequestDeps {
  runtime: ContainerRuntime;
  client: GpuplaneClient;
  /** Requests act only on this owner's containers. */
  owner: ContainerOwner;
  log: AgentLog;
}

/** One-at-a-time bookkeeping: a request is started once, and forgotten once the server no longer lists it. */
function tracker<R extends { request_id: string }>(log: AgentLog, what: string, run: (r: R) => Promise<void>) {
  const done = new Set<string>();
  const running = new Set<string>();
  return (requests: R[]): void => {
    const listed = new Set(requests.map((r) => r.request_id));
    for (const id of done) if (!listed.has(id)) done.delete(id);
    for (const r of requests) {
      if (done.has(r.request_id) || running.has(r.request_id)) continue;
      running.add(r.request_id);
      void run(r)
        .then(() => done.add(r.request_id))
        .catch((err) => {
          // Gone on the server (expired, or not this machine's): nothing more to do for it.
          if (err instanceof GpuplaneError && err.status === 404) done.add(r.request_id);
          else log.warn({ request_id: r.request_id, err: (err as Error).message }, `${what} answer failed; retrying with the next desired state`);
        })
        .finally(() => running.delete(r.request_id));
    }
  };
}

export function createRequestRunner({ runtime, client, owner, log }: RequestDeps) {
  async function containerOf(instanceId: number, desired: DesiredInstanceT[]): Promise<RuntimeContainer | undefined> {
    const list = containersByInstance(await runtime.list(owner), desired).get(instanceId) ?? [];
    const gen = desired.find((d) => d.instance_id === instanceId)?.generation;
    return list.find((c) => c.status === 'running' && c.generation === gen);
  }

  let desired: DesiredInstanceT[] = [];

  // Outcomes not yet delivered: a failed answer is sent again, without running the command or snapshot again.
  const commandAnswers = new Map<string, { output: string; exit_code: number | null; error?: string }>();
  const snapshotAnswers = new Map<string, { error?: string }>();
  const deliver = async <A>(answers: Map<string, A>, id: string, answer: A, send: (a: A) => Promise<unknown>) => {
    answers.set(id, answer);
    await send(answer);
    answers.delete(id);
  };

  const commands = tracker<CommandRequestT>(log, 'command', async (r) => {
    const send = (a: { output: string; exit_code: number | null; error?: string }) => client.agent.answerCommand(r.request_id, a);
    const known = commandAnswers.get(r.request_id);
    if (known) return deliver(commandAnswers, r.request_id, known, send);
    const c = await containerOf(r.instance_id, desired);
    if (!c) return deliver(commandAnswers, r.request_id, { output: '', exit_code: null, error: `instance ${r.instance_id} has no running container on this machine` }, send);
    log.info({ instance_id: r.instance_id, command: r.argv[0] }, 'execute');
    let answer: { output: string; exit_code: number | null; error?: string };
    try {
      const res = await runtime.exec(c.id, r.argv, { maxChars: COMMAND_OUTPUT_MAX_CHARS, timeoutS: COMMAND_TIMEOUT_S });
      answer = { output: res.output, exit_code: res.exitCode, ...(res.timedOut ? { error: `${r.argv[0]}: stopped waiting after ${COMMAND_TIMEOUT_S} s` } : {}) };
    } catch (err) {
      answer = { output: '', exit_code: null, error: String((err as Error)?.message ?? err).slice(0, 2000) };
    }
    await deliver(commandAnswers, r.request_id, answer, send);
  });

  const snapshots = tracker<SnapshotRequestT>(log, 'snapshot', async (r) => {
    const send = (a: { error?: string }) => client.agent.answerSnapshot(r.request_id, a);
    const known = snapshotAnswers.get(r.request_id);
    if (known) return deliver(snapshotAnswers, r.request_id, known, send);
    const c = await containerOf(r.instance_id, desired);
    if (!c) return deliver(snapshotAnswers, r.request_id, { error: `instance ${r.instance_id} has no running container on this machine` }, send);
    log.info({ instance_id: r.instance_id, image: r.image }, 'snapshot');
    let error: string | undefined;
    try {
      await runtime.commit(c.id, r.image, r.pause);
      try {
        await runtime.push(r.image, r.docker_login);
      } finally {
        // The host keeps no copy: its disk is the renters'.
        await runtime.removeImage(r.image).catch((err) => log.warn({ err: (err as Error).message }, 'snapshot image not removed'));
      }
    } catch (err) {
      error = String((err as Error)?.message ?? err).slice(0, 2000);
      log.warn({ instance_id: r.instance_id, err: error }, 'snapshot failed');
    }
    await deliver(snapshotAnswers, r.request_id, error === undefined ? {} : { error }, send);
    log.info({ instance_id: r.instance_id, request_id: r.request_id, pushed: error === undefined }, 'snapshot reported');
  });

  return {
    /** Starts the requests of a desired-state reply that are not done or under way yet. */
    handle(reply: { instances: DesiredInstanceT[]; commands?: CommandRequestT[]; snapshots?: SnapshotRequestT[] }): void {
      desired = reply.instances;
      commands(reply.commands ?? []);
      snapshots(reply.snapshots ?? []);
    },
  };
}

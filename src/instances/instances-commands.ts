/**
 * `execute` and `take snapshot` (docs/spec/client-compat-more.md §c): work done in an instance's container, by the
 * machine's host (instances-hosts-contract.ts). A host answers `execute` at once, or its agent does later: the request
 * is listed in the machine's desired state until the agent answers (docs/AGENT-PROTOCOL.md). A host that cannot
 * commit and push a container refuses a snapshot.
 */
import type { Static } from 'typebox';
import type { Config } from '../config.js';
import type { Principal } from '../platform/auth.js';
import { scopeOf } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import { sha256Hex, type SecretBox } from '../platform/crypto.js';
import type { Db, Tx } from '../platform/db/connect.js';
import { ApiError, badRequest } from '../platform/errors.js';
import { secretToken, type Random } from '../platform/random.js';
import type { Scheduler } from '../platform/scheduler.js';
import {
  COMMAND_OUTPUT_MAX_CHARS, type CommandRequestT, type DockerLoginT, type SnapshotRequestT,
} from '../protocol/agent-protocol-schemas.js';
import { checkInstanceKey } from './instances-service.js';
import type { InstanceRow, InstancesStore } from './instances-store.js';
import type { EventsHub } from './instances-events.js';
import { parseCommand } from './instances-execute.js';
import type { InstanceHostsPort } from './instances-hosts-contract.js';
import type { CommandRow, InstanceExtrasStore, SnapshotRow } from './instances-extras-store.js';
import type { ExecuteBody, Snapshot, SnapshotBody } from './instances-extras-schemas.js';

/** A `result_url` serves the output once, within this long. */
export const COMMAND_RESULT_TTL_S = 600;
/** A real host's agent has this long to run a command; after it the request is no longer listed for it. */
export const COMMAND_ANSWER_TTL_S = 120;
/** How long fetching `result_url` waits for the host's answer before saying "not yet" (404; the clients retry). */
export const COMMAND_WAIT_MS = 5000;
/** A held fetch looks at the database again this often (an answer written by another server process). */
const COMMAND_POLL_MS = 100;
/** A snapshot the host has not reported on in this long is failed (a large image may take this long to push). */
export const SNAPSHOT_ANSWER_TTL_S = 6 * 3600;
export const JOB_COMMAND_EXPIRE = 'instance.command_expire';
export const JOB_SNAPSHOT_EXPIRE = 'instance.snapshot_expire';
export const SNAPSHOT_EXPIRED_MSG = `the host did not report the snapshot within ${SNAPSHOT_ANSWER_TTL_S / 3600} hours`;
/** The registry the clients default to. */
export const DEFAULT_REGISTRY = 'docker.io';

/** `user/repo[:tag]` (lowercase path components, as registries require). */
const REPO = /^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$/;
/** A registry host, with a port: `docker.io`, `ghcr.io`, `registry.example.com:5000`, `127.0.0.1:5000`. */
const REGISTRY = /^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})(?::\d{1,5})?$/;

export interface CommandsDeps {
  db: Db;
  store: InstancesStore;
  extras: InstanceExtrasStore;
  /** The host of each instance's machine: where the commands run. */
  hosts: InstanceHostsPort;
  scheduler: Scheduler;
  clock: Clock;
  random: Random;
  config: Pick<Config, 'publicUrl'>;
  secretBox: SecretBox;
  hub: EventsHub;
  notify: () => void;
}

/** A real-time limit for holding a request (a virtual service clock does not move by itself). */
function deadline(ms: number): { passed: () => boolean; cancel: () => void } {
  let passed = false;
  const t = setTimeout(() => (passed = true), ms);
  return { passed: () => passed, cancel: () => clearTimeout(t) };
}

/** The image a snapshot is pushed as: the registry, then the repository, `:latest` when it names no tag. */
export function snapshotImage(registry: string, repo: string): string {
  return `${registry}/${repo}${repo.includes(':') ? '' : ':latest'}`;
}

function readSnapshot(body: Static<typeof SnapshotBody>, id: number): { image: string; login: DockerLoginT | null; pause: boolean } {
  if (body.id !== undefined && body.id !== null && String(body.id) !== String(id)) {
    throw badRequest(`body.id ${JSON.stringify(body.id)} is not the instance in the path (${id})`);
  }
  const repo = body.personal_repo ?? '';
  if (repo === '') throw badRequest('body.personal_repo is required: the repository to push the snapshot to (e.g. myname/my-snapshot)');
  if (!REPO.test(repo)) throw badRequest('body.personal_repo must be a repository such as myname/my-snapshot or myname/my-snapshot:v1 (lowercase)');
  const registry = body.container_registry || DEFAULT_REGISTRY;
  if (!REGISTRY.test(registry)) throw badRequest('body.container_registry must be a registry host such as docker.io or ghcr.io');
  const user = body.docker_login_user || null;
  const pass = body.docker_login_pass || null;
  if ((user === null) !== (pass === null)) throw badRequest('body: give both docker_login_user and docker_login_pass, or neither (a registry that takes pushes without a login)');
  const pause = body.pause ?? 'true';
  if (pause !== true && pause !== false && pause !== 'true' && pause !== 'false') throw badRequest('body.pause must be "true" or "false"');
  return {
    image: snapshotImage(registry, repo),
    login: user && pass ? { username: user, password: pass, server: registry } : null,
    pause: pause === true || pause === 'true',
  };
}

export function instanceCommandsFactory(deps: CommandsDeps) {
  const { db, store, extras, hosts, scheduler, clock, random, config, secretBox, hub, notify } = deps;

  scheduler.register(JOB_COMMAND_EXPIRE, async ({ id }: { id: number }, { tx }) => {
    // The output is not kept past its URL's life.
    await extras.dropOutput(id, tx);
  });
  scheduler.register(JOB_SNAPSHOT_EXPIRE, async ({ id }: { id: number }, { tx, now }) => {
    await extras.answerSnapshot(id, SNAPSHOT_EXPIRED_MSG, now, tx);
  });

  /** The caller's live instance (not locked: these requests change no instance state), or 404. */
  async function instanceOf(principal: Principal, id: number, tx?: Tx): Promise<InstanceRow> {
    checkInstanceKey(principal, id);
    const inst = await store.findInScope(id, scopeOf(principal), tx);
    if (!inst) throw new ApiError('not_found', `instance ${id} not found`);
    return inst;
  }

  const requestId = (prefix: string) => `${prefix}_${random.bytes(16).toString('hex')}`;

  const snapshotView = (r: SnapshotRow): Static<typeof Snapshot> => ({
    id: r.id, image: r.image, status: r.answered_at === null ? 'pending' : r.error === null ? 'pushed' : 'failed',
    error: r.error, created_at: r.created_at, finished_at: r.answered_at,
  });

  return {
    /**
     * `PUT /instances/command/{id}/` `{command}`: runs an allowed command in the running container. The output is at
     * `result_url`, once, for anyone holding the URL (the clients fetch it without a key): its random token is the
     * credential, and only its hash is stored.
     */
    async execute(principal: Principal, id: number, body: Static<typeof ExecuteBody>) {
      const argv = parseCommand(body.command);
      const token = secretToken(random, '');
      await db.transaction().execute(async (tx) => {
        const inst = await instanceOf(principal, id, tx);
        if (inst.actual_status !== 'running') {
          throw new ApiError('conflict', `instance ${id} is ${inst.actual_status ?? 'provisioning'}: execute runs the command in its container, which must be running`);
        }
        const now = clock.now();
        // Answered at once by the host, or later by its agent.
        const output = await hosts.execute(tx, { instanceId: id, machineId: inst.machine_id!, argv, instanceCreatedAt: inst.created_at });
        const row = {
          instance_id: id, machine_id: inst.machine_id!, request_id: requestId('cmd'), token_hash: sha256Hex(token), argv: JSON.stringify(argv),
          output: output ?? null, answered_at: output === undefined ? null : now, fetched_at: null,
          created_at: now, expires_at: now + COMMAND_RESULT_TTL_S,
        };
        const rowId = await extras.insertCommand(row, tx);
        await scheduler.schedule(JOB_COMMAND_EXPIRE, row.expires_at, { id: rowId }, { tx });
      });
      notify();
      return {
        success: true as const,
        result_url: `${config.publicUrl}/api/v0/instances/command_output/?token=${token}`,
        writeable_path: '',
        msg: 'the output is at result_url (served once)',
      };
    },

    /** The output behind a `result_url`, once; 404 before the host has answered (the clients retry), and after. */
    async commandOutput(token: string): Promise<string> {
      const hash = sha256Hex(token);
      const gone = () => new ApiError('not_found', 'no such command output: it was fetched already (a result_url serves it once), or it expired');
      let row = await extras.commandByToken(hash);
      if (!row || row.fetched_at !== null || row.expires_at < clock.now()) throw gone();
      // Past its answer time the host will not answer: no point holding the fetch.
      const abandoned = (r: CommandRow) => r.answered_at === null && clock.now() - r.created_at > COMMAND_ANSWER_TTL_S;
      const limit = deadline(COMMAND_WAIT_MS);
      try {
        while (row && row.answered_at === null && !abandoned(row) && !limit.passed() && !hub.closed) {
          await hub.next(COMMAND_POLL_MS);
          row = await extras.commandByToken(hash);
        }
      } finally {
        limit.cancel();
      }
      if (!row) throw gone();
      if (row.answered_at === null) {
        if (abandoned(row)) {
          throw new ApiError('not_found', `the host did not run the command: its agent did not answer within ${COMMAND_ANSWER_TTL_S} s (is the host online?)`);
        }
        throw new ApiError('not_found', 'the host has not sent the output yet; try again in a moment');
      }
      // Two fetches at once: the one whose update lands serves it.
      if (!(await extras.takeOutput(row.id, clock.now()))) throw gone();
      return row.output ?? '';
    },

    /**
     * `POST /instances/take_snapshot/{id}/`: the host commits the running container (paused meanwhile when `pause`)
     * and pushes it with the given login. The reply says the request was taken; how it went is in `snapshots(id)`.
     */
    async takeSnapshot(principal: Principal, id: number, body: Static<typeof SnapshotBody>) {
      const req = readSnapshot(body, id);
      const out = await db.transaction().execute(async (tx) => {
        const inst = await instanceOf(principal, id, tx);
        await hosts.assertCanSnapshot(tx, { instanceId: id, machineId: inst.machine_id! });
        if (inst.actual_status !== 'running') {
          throw new ApiError('conflict', `instance ${id} is ${inst.actual_status ?? 'provisioning'}: a snapshot commits its container, which must be running`);
        }
        const now = clock.now();
        const snapshotId = await extras.insertSnapshot({
          instance_id: id, machine_id: inst.machine_id!, request_id: requestId('snap'), image: req.image,
          login_sealed: req.login ? secretBox.seal(JSON.stringify(req.login)) : null, pause: req.pause ? 1 : 0, error: null, answered_at: null,
          created_at: now,
        }, tx);
        await scheduler.schedule(JOB_SNAPSHOT_EXPIRE, now + SNAPSHOT_ANSWER_TTL_S, { id: snapshotId }, { tx });
        return { success: true as const, msg: `snapshot ${snapshotId} of instance ${id} requested: the host commits its container and pushes it to ${req.image}` };
      });
      notify();
      return out;
    },

    /** The instance's snapshot requests, oldest first, with how each went. */
    async snapshots(principal: Principal, id: number) {
      await instanceOf(principal, id);
      return { success: true as const, snapshots: (await extras.snapshotsOf(id)).map(snapshotView) };
    },

    /** For real hosts (src/agent-server/): what a machine's agent must do, and its answers. */
    agent: {
      async openCommands(machineId: number, tx: Tx = db): Promise<CommandRequestT[]> {
        return (await extras.openCommands(machineId, clock.now() - COMMAND_ANSWER_TTL_S, tx)).map((c) => ({
          request_id: c.request_id, instance_id: c.instance_id, argv: JSON.parse(c.argv) as string[],
        }));
      },

      async openSnapshots(machineId: number, tx: Tx = db): Promise<SnapshotRequestT[]> {
        return (await extras.openSnapshots(machineId, clock.now() - SNAPSHOT_ANSWER_TTL_S, tx)).map((s) => ({
          request_id: s.request_id, instance_id: s.instance_id, image: s.image, pause: s.pause === 1,
          docker_login: s.login_sealed ? (JSON.parse(secretBox.open(s.login_sealed) ?? 'null') as DockerLoginT | null) : null,
        }));
      },

      /** The agent's answer to a command of its machine: the output (and why it could not run, if it could not). */
      async answerCommand(machineId: number, requestId: string, a: { output: string; error?: string }): Promise<void> {
        const row = await extras.commandByRequest(requestId);
        if (!row || row.machine_id !== machineId) throw new ApiError('not_found', `command ${requestId} not found`);
        const text = a.error ? `${a.output}${a.output && !a.output.endsWith('\n') ? '\n' : ''}${a.error}\n` : a.output;
        await extras.answerCommand(row.id, text.slice(0, COMMAND_OUTPUT_MAX_CHARS), clock.now());
        notify();
      },

      async answerSnapshot(machineId: number, requestId: string, a: { error?: string }): Promise<void> {
        const row = await extras.snapshotByRequest(requestId);
        if (!row || row.machine_id !== machineId) throw new ApiError('not_found', `snapshot ${requestId} not found`);
        await extras.answerSnapshot(row.id, a.error ?? null, clock.now());
        notify();
      },
    },
  };
}

export type InstanceCommands = ReturnType<typeof instanceCommandsFactory>;

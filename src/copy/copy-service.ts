/**
 * `vastai copy` and `vastai cancel copy` (client-compat-connect "copy SRC DST"; client-compat-more §c):
 * - one side local (`PUT /commands/rsync/`, or `/commands/copy_direct/` with an explicit `local:` side, which the
 *   client sends there): the answer is where the client's own rsync reaches the instance: the gateway's host and the
 *   instance's copy port (`dst_addr`/`dst_port` for an upload, `src_addr`/`src_port` for a download). The client then
 *   runs `rsync … -e 'ssh -p PORT' … vastai_kaalia@ADDR::<id>/<path>`: the gateway passes that SSH connection to the
 *   agent's own SSH server, whose `vastai_kaalia` user gets an rsync daemon with the instance's module.
 * - both sides instances (`PUT /commands/copy_direct/`): the server copies in the background, through both hosts'
 *   agent tunnels (copy-relay.ts), and shows how it goes in the destination's status bar (`status_msg`), as the
 *   client tells the renter ("check instance status bar for progress updates"). One copy into an instance at a time.
 * - cancel (`DELETE /commands/copy_direct/` `{dst_id}`): stops the copies into that instance, here or, through a
 *   cancel mark in the database, in another server process (copy-store.ts).
 * Who may: whoever may use both instances (the renter, or a team member with instance rights: the instances
 * feature's scope check), and only instances running on machines run by `gpuplane agent`; a simulated machine
 * has no container to copy to or from, and says so (409).
 */
import type { Logger } from 'pino';
import type { Static } from 'typebox';
import type { Principal } from '../platform/auth.js';
import { scopeOf } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import { ApiError, badRequest } from '../platform/errors.js';
import { TunnelError, type TunnelsApi } from '../tunnels/tunnels-contract.js';
import { copySide, modulePath, type CopySide } from './copy-locations.js';
import { relayCopy, type RelayPlan } from './copy-relay.js';
import type { CopyStore, RunningCopy } from './copy-store.js';
import type { CancelCopyBody, CancelCopyReply, CopyBody, CopyReply } from './copy-schemas.js';

/** The most copies between instances one account runs at once (each holds two tunnel streams and staging disk). */
export const COPIES_PER_USER_MAX = 4;
/** A copy's progress reaches the status bar at most this often. */
export const PROGRESS_NOTE_EVERY_S = 5;
/** A running copy looks for a cancel made in another server process this often. */
export const CANCEL_POLL_MS = 2000;

/** What the copy feature reads of an instance (the instances feature's view of it). */
export interface CopyInstance {
  id: number;
  machine_id: number | null;
  actual_status: string | null;
  image_runtype: string | null;
}

export interface CopyServiceDeps {
  store: CopyStore;
  clock: Clock;
  log: Pick<Logger, 'info' | 'warn'>;
  /** The caller's live instance (its scope and instance key checked), or undefined when it is not theirs or gone. */
  instance(principal: Principal, id: number): Promise<CopyInstance | undefined>;
  /** Whether the machine is run by `gpuplane agent` (else it is one of the emulator's simulated machines). */
  isAgentMachine(machineId: number): Promise<boolean>;
  /**
   * Where a renter's rsync over SSH reaches the instance's copy endpoint (the gateway's host and the instance's copy
   * port), or undefined when the gateway serves none for it (runtype `args`).
   */
  copyEndpoint(inst: CopyInstance): { host: string; port: number } | undefined;
  /** Writes a note in the running instance's status bar (`status_msg`). */
  noteStatus(instanceId: number, msg: string): Promise<void>;
  /** The server's rsync. @default 'rsync' */
  rsync?: string;
  /** Where copies between instances are staged. @default os.tmpdir() */
  tmpRoot?: string;
  /**
   * The caller's volume (`V.<id>`, issue 33): the instances that mount it and where, or undefined when it is not theirs
   * or gone. Absent: this server copies no volumes.
   */
  volumeMounts?(principal: Principal, volumeId: number): Promise<{ instanceId: number; mountPath: string }[] | undefined>;
}

type Located = { side: CopySide; path: string };

export function copyServiceFactory(deps: CopyServiceDeps) {
  const { store, clock, log } = deps;
  // The agents' tunnels (src/tunnels/), wired by the root once built: copies between instances need them.
  let tunnels: TunnelsApi | undefined;

  /** The caller's instance, running on a real host: else the error that says which of these it is not. */
  async function usable(principal: Principal, id: number): Promise<CopyInstance & { machine_id: number }> {
    const inst = await deps.instance(principal, id);
    if (!inst) throw new ApiError('not_found', `instance ${id} not found`);
    if (inst.machine_id === null || !(await deps.isAgentMachine(inst.machine_id))) {
      throw new ApiError(
        'conflict',
        `instance ${id} is on a simulated machine (emulator): there is no container to copy to or from; copy works for instances on machines run by gpuplane agent`,
      );
    }
    if (inst.actual_status !== 'running') {
      throw new ApiError('conflict', `instance ${id} is ${inst.actual_status ?? 'not started yet'}: copy needs it running; start it and wait until it runs`);
    }
    return { ...inst, machine_id: inst.machine_id };
  }

  function located(body: Static<typeof CopyBody>): { src: Located; dst: Located } {
    return {
      src: { side: copySide('src_id', body.src_id), path: body.src_path ?? '/' },
      dst: { side: copySide('dst_id', body.dst_id), path: body.dst_path ?? '/' },
    };
  }

  /** One side local: where the client's rsync goes. */
  async function endpoint(principal: Principal, remote: 'src' | 'dst', id: number): Promise<Static<typeof CopyReply>> {
    const inst = await usable(principal, id);
    const at = deps.copyEndpoint(inst);
    if (!at) {
      throw new ApiError(
        'conflict',
        `instance ${id} has runtype ${inst.image_runtype}, which has no SSH endpoint to copy through; copy between instances (vastai copy C.<id>:/path C.${id}:/path) reaches it`,
      );
    }
    return remote === 'dst'
      ? { success: true, msg: `rsync to vastai_kaalia@${at.host}::${id} over ssh -p ${at.port}`, dst_addr: at.host, dst_port: at.port }
      : { success: true, msg: `rsync from vastai_kaalia@${at.host}::${id} over ssh -p ${at.port}`, src_addr: at.host, src_port: at.port };
  }

  /** Both sides instances: the copy runs here, in the background. */
  async function direct(principal: Principal, src: Located & { id: number }, dst: Located & { id: number }, source: string): Promise<Static<typeof CopyReply>> {
    const srcPath = modulePath('src_path', src.path);
    const dstPath = modulePath('dst_path', dst.path);
    const [from, to] = [await usable(principal, src.id), await usable(principal, dst.id)];
    const api = tunnels;
    if (!api) throw new ApiError('service_unavailable', 'copy between instances needs the agents\' tunnels, which this server does not run');
    for (const inst of [from, to]) {
      if (!(await api.connected(inst.machine_id))) {
        throw new ApiError('conflict', `the host of instance ${inst.id} is not connected to the server now (its agent's tunnel is down); try again once it is back`);
      }
    }
    const userId = scopeOf(principal).userId;
    if (store.byDst(dst.id)) {
      throw new ApiError('conflict', `a copy into instance ${dst.id} is running; wait for it, or stop it first (vastai cancel copy ${dst.id})`);
    }
    if (store.countOfUser(userId) >= COPIES_PER_USER_MAX) {
      throw new ApiError('rate_limited', `this account runs ${COPIES_PER_USER_MAX} copies between instances, the most this server allows at once; wait for one to end`);
    }
    start(api, { srcId: from.id, srcPath, dstId: to.id, dstPath }, { from: from.machine_id, to: to.machine_id }, userId, source, { src: src.path, dst: dst.path });
    return {
      success: true,
      msg: `copy from instance ${from.id}:${src.path} to instance ${to.id}:${dst.path} started; its progress shows in instance ${to.id}'s status_msg`,
    };
  }

  function start(
    api: TunnelsApi, plan: RelayPlan, machines: { from: number; to: number }, userId: number, source: string, shown: { src: string; dst: string },
  ): void {
    const abort = new AbortController();
    const startedAt = clock.now();
    const what = `copy from instance ${plan.srcId}:${shown.src} to ${shown.dst}`;
    let lastNote = -Infinity;
    let canceledBy: 'here' | 'mark' | undefined;
    // Notes are written one after another, so the last one asked for is the one left (progress never overwrites "done").
    let notes = Promise.resolve();
    const note = (msg: string): Promise<void> =>
      (notes = notes.then(() => deps.noteStatus(plan.dstId, msg)).catch((err: unknown) => log.warn({ err, instance: plan.dstId }, 'writing a copy\'s status failed')));
    const poll = setInterval(() => {
      store.cancelMark(plan.dstId).then(
        (mark) => {
          if (mark !== undefined && mark >= startedAt && !abort.signal.aborted) {
            canceledBy = 'mark';
            abort.abort();
          }
        },
        () => undefined,
      );
    }, CANCEL_POLL_MS);
    const run = async () => {
      await note(`${what}: starting`);
      log.info({ src: plan.srcId, dst: plan.dstId, user: userId, source }, 'copy between instances started');
      try {
        await relayCopy(plan, {
          rsync: deps.rsync,
          tmpRoot: deps.tmpRoot,
          signal: abort.signal,
          open: async (side) => {
            const [machineId, instanceId] = side === 'src' ? [machines.from, plan.srcId] : [machines.to, plan.dstId];
            try {
              return (await api.open(machineId, { kind: 'rsync', instanceId }, { source })).stream;
            } catch (err) {
              if (err instanceof TunnelError) throw new Error(`instance ${instanceId}: ${err.message}`);
              throw err;
            }
          },
          onProgress: (leg, percent) => {
            const now = clock.now();
            if (now - lastNote < PROGRESS_NOTE_EVERY_S) return;
            lastNote = now;
            void note(`${what}: ${leg === 'pull' ? `step 1 of 2, reading instance ${plan.srcId}` : `step 2 of 2, writing`}, ${percent}%`);
          },
        });
        await note(`${what}: done`);
        log.info({ src: plan.srcId, dst: plan.dstId, user: userId, seconds: clock.now() - startedAt }, 'copy between instances done');
      } catch (err) {
        if (abort.signal.aborted) {
          await note(`${what}: canceled`);
          log.info({ src: plan.srcId, dst: plan.dstId, user: userId }, 'copy between instances canceled');
          if (canceledBy === 'mark') await store.clearCancel(plan.dstId).catch(() => undefined);
        } else {
          const why = err instanceof Error ? err.message : String(err);
          await note(`${what}: failed: ${why}`);
          log.warn({ src: plan.srcId, dst: plan.dstId, user: userId, why }, 'copy between instances failed');
        }
      } finally {
        clearInterval(poll);
      }
    };
    const copy: RunningCopy = {
      srcId: plan.srcId, dstId: plan.dstId, userId, startedAt, abort,
      done: Promise.resolve().then(run).finally(() => store.remove(copy)),
    };
    void copy.done;
    copy.abort.signal.addEventListener('abort', () => (canceledBy ??= 'here'), { once: true });
    store.add(copy);
  }

  /**
   * A volume side (`V.<id>:path`) as the instance side it is: a running instance of the caller's that mounts the
   * volume, and the path below its mount. A volume lives on its host as a Docker volume (src/agent/volumes.ts) with no
   * SSH endpoint of its own, so a copy reaches it through a container that has it mounted.
   */
  async function throughInstance(principal: Principal, l: Located, field: 'src_id' | 'dst_id'): Promise<Located> {
    if (l.side.kind !== 'volume') return l;
    const volumeId = l.side.id;
    if (!deps.volumeMounts) throw new ApiError('service_unavailable', `body.${field} V.${volumeId} is a volume: this server does not copy volumes; copy to or from an instance (C.<id>:/path)`);
    const mounts = await deps.volumeMounts(principal, volumeId);
    if (!mounts) throw new ApiError('not_found', `volume ${volumeId} not found`);
    for (const m of mounts) {
      const inst = await deps.instance(principal, m.instanceId);
      if (inst?.actual_status === 'running') {
        return { side: { kind: 'instance', id: m.instanceId }, path: `${m.mountPath.replace(/\/+$/, '')}/${l.path.replace(/^\/+/, '')}` };
      }
    }
    throw new ApiError(
      'conflict',
      `volume ${volumeId} is not mounted by a running instance of yours: a copy reaches a volume through one; rent or start an instance that links it (volume_info), then copy again`,
    );
  }

  return {
    /** `PUT /commands/rsync/` and `PUT /commands/copy_direct/`: the same rules, by what the two sides are. */
    async copy(principal: Principal, body: Static<typeof CopyBody>, source: string): Promise<Static<typeof CopyReply>> {
      const sides = located(body);
      // The vastai client: "Volume copy is currently only supported for copying to other volumes, instances, or cloud
      // services, not local" (its rsync would name the volume as the daemon module, which no host serves).
      if ((sides.src.side.kind === 'volume' && sides.dst.side.kind === 'local') || (sides.dst.side.kind === 'volume' && sides.src.side.kind === 'local')) {
        throw badRequest('a volume (V.<id>) copies to or from an instance or another volume, not the local machine; copy through an instance that mounts it (C.<id>:<mount_path>/...)');
      }
      const src = await throughInstance(principal, sides.src, 'src_id');
      const dst = await throughInstance(principal, sides.dst, 'dst_id');
      if (src.side.kind === 'local' && dst.side.kind === 'local') {
        throw badRequest('body: src_id and dst_id are both local; one side must be an instance ("7" or "C.7")');
      }
      if (src.side.kind === 'local') return endpoint(principal, 'dst', (dst.side as { id: number }).id);
      if (dst.side.kind === 'local') return endpoint(principal, 'src', (src.side as { id: number }).id);
      return direct(principal, { ...src, id: (src.side as { id: number }).id }, { ...dst, id: (dst.side as { id: number }).id }, source);
    },

    /** `DELETE /commands/copy_direct/` `{dst_id}`: stops the copies into that instance. */
    async cancel(principal: Principal, body: Static<typeof CancelCopyBody>): Promise<Static<typeof CancelCopyReply>> {
      // `vastai cancel copy DST` sends DST as typed: `7`, `C.7`, or `7:/path` (its help says "instance_id:/path").
      const typed = typeof body.dst_id === 'string' && body.dst_id.includes(':') ? body.dst_id.slice(0, body.dst_id.indexOf(':')) : body.dst_id;
      const side = copySide('dst_id', typed);
      if (side.kind !== 'instance') throw badRequest('body.dst_id must be the instance the copy writes to ("7" or "C.7")');
      const inst = await deps.instance(principal, side.id);
      if (!inst) throw new ApiError('not_found', `instance ${side.id} not found`);
      const here = store.byDst(side.id);
      if (here) {
        here.abort.abort();
        await here.done;
        return { success: true, msg: `the copy into instance ${side.id} is canceled` };
      }
      // Perhaps another server process runs it: it sees the mark within CANCEL_POLL_MS.
      await store.markCancel(side.id, clock.now());
      return { success: true, msg: `any copy into instance ${side.id} is canceled` };
    },

    /** Wires the agents' tunnels (the root, once built). */
    useTunnels(api: TunnelsApi): void {
      tunnels = api;
    },

    /** Settles once no copy into `dstId` runs in this process (tests, and the app's close). */
    async settled(dstId?: number): Promise<void> {
      await Promise.all(store.all().filter((c) => dstId === undefined || c.dstId === dstId).map((c) => c.done));
    },

    /** Stops every copy this process runs (the app closes). */
    async close(): Promise<void> {
      for (const c of store.all()) c.abort.abort();
      await Promise.all(store.all().map((c) => c.done));
    },
  };
}

export type CopyService = ReturnType<typeof copyServiceFactory>;

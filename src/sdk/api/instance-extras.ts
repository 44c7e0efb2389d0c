/**
 * Instance extras (docs/spec/client-compat-more.md §c): reboot, recycle, update, execute, snapshots. Part of
 * `client.instances`. `copy` sends what the vastai client sends (the server's copy feature, src/copy/); cloud copy the
 * server cannot do yet, and says why.
 */
import type { Static } from 'typebox';
import type {
  ActionReply, CloudCopyBody, ExecuteReply, SnapshotBody, SnapshotsReply, UpdateTemplateBody, UpdateTemplateReply,
} from '../../instances/instances-extras-schemas.js';
import { GpuplaneError } from '../errors.js';
import { reachable } from './instances.js';
import type { Transport } from '../transport.js';

export type UpdateInstance = Omit<Static<typeof UpdateTemplateBody>, 'id'>;
export type SnapshotRequest = {
  /** The repository to push to, e.g. `myname/my-snapshot[:tag]`. */
  repo: string;
  /** @default 'docker.io' */
  registry?: string;
  login?: { username: string; password: string };
  /** Pause the container while it is committed. @default true */
  pause?: boolean;
};

/** `[id:]path` as the clients read a copy location: `7:/workspace` → `"7"`, a bare path → null (this machine). */
export function copyLocation(loc: string): { id: string | null; path: string } {
  const m = /^([^:/]+):(.*)$/.exec(loc);
  return m ? { id: m[1], path: m[2] || '/' } : { id: null, path: loc };
}

/** Fetches of `result_url` before giving up: the server holds each one until the output is there, or a few seconds. */
const RESULT_ATTEMPTS = 6;

export function instanceExtrasApi(t: Transport) {
  return {
    /** `PUT /api/v0/instances/reboot/{id}/`: the container restarts; the instance keeps its GPUs. */
    reboot: (id: number) => t.request<Static<typeof ActionReply>>('PUT', `/api/v0/instances/reboot/${id}/`, { body: {} }),
    /** `PUT /api/v0/instances/recycle/{id}/`: the container is made anew from a freshly pulled image. */
    recycle: (id: number) => t.request<Static<typeof ActionReply>>('PUT', `/api/v0/instances/recycle/${id}/`, { body: {} }),
    /** `PUT /api/v0/instances/update_template/{id}/`: a new template, image, args, env or onstart. */
    update: (id: number, body: UpdateInstance) =>
      t.request<Static<typeof UpdateTemplateReply>>('PUT', `/api/v0/instances/update_template/${id}/`, { body: { id, ...body } }),
    /** `PUT /api/v0/instances/command/{id}/`: the reply with its one-time `result_url`. */
    requestCommand: (id: number, command: string) =>
      t.request<Static<typeof ExecuteReply>>('PUT', `/api/v0/instances/command/${id}/`, { body: { command } }),
    /** Runs `ls`, `rm` or `du` in the running instance and returns what it printed. */
    execute: async (id: number, command: string): Promise<string> => {
      const r = await t.request<Static<typeof ExecuteReply>>('PUT', `/api/v0/instances/command/${id}/`, { body: { command } });
      const url = reachable(r.result_url, t.url);
      for (let attempt = 1; ; attempt++) {
        try {
          const text = await t.getText(url);
          // As the clients do: the host path prefix is removed (gpuplane sends none).
          return r.writeable_path ? text.split(r.writeable_path).join('') : text;
        } catch (err) {
          // 404 until the host has sent the output (each fetch is held a few seconds meanwhile).
          if (!(err instanceof GpuplaneError && err.status === 404) || attempt >= RESULT_ATTEMPTS) throw err;
        }
      }
    },
    /** `POST /api/v0/instances/take_snapshot/{id}/`: its host commits the container and pushes it (a real host only). */
    takeSnapshot: (id: number, s: SnapshotRequest) =>
      t.request<Static<typeof ActionReply>>('POST', `/api/v0/instances/take_snapshot/${id}/`, {
        body: {
          id: String(id), container_registry: s.registry ?? 'docker.io', personal_repo: s.repo,
          docker_login_user: s.login?.username ?? null, docker_login_pass: s.login?.password ?? null, pause: s.pause === false ? 'false' : 'true',
        } satisfies Static<typeof SnapshotBody>,
      }),
    /**
     * `PUT /api/v0/commands/copy_direct/` (or `/rsync/` when a side is this machine): copy a directory. With a local
     * side the reply says where an rsync over SSH reaches the instance (`dst_addr`/`dst_port` or `src_addr`/`src_port`,
     * user `vastai_kaalia`, module = the instance id), which the caller runs; between instances the server copies.
     */
    copy: (src: string, dst: string) => {
      const [s, d] = [copyLocation(src), copyLocation(dst)];
      const path = s.id === null || d.id === null ? '/api/v0/commands/rsync/' : '/api/v0/commands/copy_direct/';
      return t.request<Record<string, unknown>>('PUT', path, { body: { client_id: 'me', src_id: s.id, dst_id: d.id, src_path: s.path, dst_path: d.path } });
    },
    /** `POST /api/v0/commands/rclone/`: cloud copy. Not available yet: the server answers 503 saying what is missing. */
    cloudCopy: (body: Static<typeof CloudCopyBody>) => t.request<Record<string, unknown>>('POST', '/api/v0/commands/rclone/', { body }),
    /** `GET /api/v0/instances/snapshots/{id}/`: the instance's snapshots, pending, pushed or failed. */
    snapshots: (id: number) => t.request<Static<typeof SnapshotsReply>>('GET', `/api/v0/instances/snapshots/${id}/`),
  };
}

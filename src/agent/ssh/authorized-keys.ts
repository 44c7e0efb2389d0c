/**
 * Keys for images with their own sshd: the container's entrypoint writes /root/.ssh/authorized_keys once, at start
 * (container-spec.ts `keepAliveScript`), from the keys its container was made with. An attach or detach after that
 * must reach the running container too (issue 31 item 4: within 2 s), so on each desired state the agent rewrites
 * the file in every running container of an SSH runtype (`ssh`, `jupyter`; an `args` image is the renter's own
 * business) whose keys differ from what it last wrote there. "Last wrote" is per container process (its id and pid):
 * a restarted container's entrypoint wrote its creation-time keys again, so it is written anew.
 *
 * Written inside the container (docker exec), to a temporary file renamed over the old one, so sshd never reads half
 * a file, and no path is resolved on the host. The keys go as arguments, never logged.
 */
import type { AgentLog } from '../agent-log.js';
import type { ContainerAccess } from './container-access.js';

export const AUTHORIZED_KEYS_SCRIPT = `mkdir -p /root/.ssh && chmod 700 /root/.ssh || exit 1
t=/root/.ssh/.authorized_keys.gpuplane
: > "$t" && chmod 600 "$t" || exit 1
[ $# -gt 0 ] && printf '%s\\n' "$@" > "$t"
mv -f "$t" /root/.ssh/authorized_keys`;

/** The file's content for these keys (one per line, trimmed). */
export function authorizedKeysText(keys: readonly string[]): string {
  return keys.map((k) => `${k.trim()}\n`).join('');
}

/** What was last written for an instance, and when its container was last looked at. */
export interface WrittenKeys {
  keys: string;
  /** `<container id>:<pid>` written into. */
  process: string;
  checkedAt: number;
}

/**
 * Unchanged keys are checked against the container process again after this long (a restarted container's entrypoint
 * wrote its creation-time keys back); changed keys are written at once.
 */
export const RECHECK_MS = 15_000;

/**
 * Writes authorized_keys where the keys changed. `written` is kept by the caller across calls (entries of instances
 * gone are dropped); `now` in milliseconds.
 */
export async function syncAuthorizedKeys(
  access: ContainerAccess,
  instances: ReadonlyMap<number, { sshKeys: readonly string[]; runtype: string }>,
  written: Map<number, WrittenKeys>,
  log: AgentLog,
  now: number,
): Promise<void> {
  for (const id of [...written.keys()]) if (!instances.has(id)) written.delete(id);
  await Promise.all(
    [...instances].filter(([, inst]) => inst.runtype !== 'args').map(async ([id, inst]) => {
      const keys = inst.sshKeys.map((k) => k.trim()).filter((k) => k !== '');
      const text = authorizedKeysText(keys);
      const last = written.get(id);
      if (last && last.keys === text && now - last.checkedAt < RECHECK_MS) return;
      try {
        const c = await access.find(id);
        if (!c?.running) return;
        const proc = `${c.id}:${c.pid}`;
        if (last && last.keys === text && last.process === proc) {
          last.checkedAt = now;
          return;
        }
        const p = await access.exec(c.id, { argv: ['/bin/sh', '-c', AUTHORIZED_KEYS_SCRIPT, 'sh', ...keys] });
        p.stdin.end();
        p.stdout.resume();
        p.stderr.resume();
        const code = await p.exit;
        if (code !== 0) throw new Error(`the script exited with ${code}`);
        written.set(id, { keys: text, process: proc, checkedAt: now });
        log.info({ instance_id: id, key_count: keys.length }, 'authorized_keys updated in the container');
      } catch (err) {
        log.warn({ instance_id: id, err: (err as Error).message }, 'cannot update authorized_keys in the container');
      }
    }),
  );
}

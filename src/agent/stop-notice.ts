/**
 * The notice before a stop (issue 33 item 3), as a program in the container reads it: the agent writes
 * STOP_NOTICE_PATH into the container just before it sends SIGTERM, and SIGKILL follows `grace_s` seconds later. The
 * file needs no credential, no network and no tool in the image (the runtime puts it through Docker's archive API): a
 * program checks for it (`test -f /run/gpuplane/stop`) on SIGTERM or on a timer, and reads why and when from it. One
 * line of JSON:
 *
 *   {"instance_id":7,"reason":"outbid: …","sigterm_at":"2026-11-28T10:40:00Z","sigkill_at":"2026-11-28T10:40:30Z",
 *    "grace_s":30,"sigterm_at_unix":1795855200,"sigkill_at_unix":1795855230}
 *
 * The container's filesystem outlives a stop, so a notice would be found again after the next start: the agent
 * removes it right after that start (`rm -f`, when the image has `rm`), and a notice whose `sigkill_at` is past is
 * stale in any case.
 */

/** Where the notice is written in the container. */
export const STOP_NOTICE_PATH = '/run/gpuplane/stop';

const iso = (unixS: number) => new Date(Math.floor(unixS) * 1000).toISOString().replace(/\.000Z$/, 'Z');

/** The notice's text: why the container stops, when SIGTERM is sent (`now`) and when SIGKILL follows. */
export function stopNotice(n: { instanceId: number; reason: string; now: number; graceS: number }): string {
  const term = Math.floor(n.now);
  const kill = term + n.graceS;
  return `${JSON.stringify({
    instance_id: n.instanceId,
    reason: n.reason,
    sigterm_at: iso(term),
    sigkill_at: iso(kill),
    grace_s: n.graceS,
    sigterm_at_unix: term,
    sigkill_at_unix: kill,
  })}\n`;
}

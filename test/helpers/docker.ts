/**
 * Docker for the agent's tests: the local busybox image they run (no registry is reachable here, so it is built from
 * Debian's static busybox), and a wait on a container's live log.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type Docker from 'dockerode';

/** The tests' image: `FROM scratch` plus the static busybox and its applets. */
export const BUSYBOX_IMAGE = 'gpuplane-agent-busybox:test';
const BUSYBOX_REPO = 'gpuplane-agent-busybox';

/** Builds BUSYBOX_IMAGE from `busybox` (a static binary) in a build context under `dir`. */
export async function buildBusyboxImage(docker: Docker, dir: string, busybox = '/bin/busybox'): Promise<void> {
  // Built once per busybox: the image is also tagged with the binary's SHA-256, and an image of that tag is used as it
  // is, so the test files that need it, and later runs on this daemon, do not build it again. (A tag, not a label: a
  // container inherits its image's labels, and the tests compare the agent's labels exactly.)
  const byBinary = `sha-${createHash('sha256').update(readFileSync(busybox)).digest('hex').slice(0, 32)}`;
  const made = await docker.getImage(`${BUSYBOX_REPO}:${byBinary}`).inspect().catch(() => undefined);
  if (made) {
    await docker.getImage(made.Id).tag({ repo: BUSYBOX_REPO, tag: 'test' });
    return;
  }
  const ctx = join(dir, 'image');
  mkdirSync(ctx);
  copyFileSync(busybox, join(ctx, 'busybox'));
  writeFileSync(join(ctx, 'Dockerfile'), 'FROM scratch\nCOPY busybox /bin/busybox\nRUN ["/bin/busybox", "--install", "-s", "/bin"]\n');
  const stream = await docker.buildImage({ context: ctx, src: ['Dockerfile', 'busybox'] }, { t: BUSYBOX_IMAGE });
  const out = await new Promise<{ error?: string }[]>((resolve, reject) =>
    docker.modem.followProgress(stream, (err: Error | null, o: { error?: string }[]) => (err ? reject(err) : resolve(o))),
  );
  const failed = out.find((o) => o.error);
  if (failed) throw new Error(`building ${BUSYBOX_IMAGE} failed: ${failed.error}`);
  await docker.getImage(BUSYBOX_IMAGE).tag({ repo: BUSYBOX_REPO, tag: byBinary });
}

/** Resolves when the container's log (followed live) contains `text`. */
export async function logShows(docker: Docker, containerId: string, text: string, times = 1): Promise<void> {
  const enough = (seen: string) => seen.split(text).length - 1 >= times;
  const stream = (await docker.getContainer(containerId).logs({ follow: true, stdout: true, stderr: true })) as NodeJS.ReadableStream & { destroy(): void };
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    stream.on('data', (d: Buffer) => {
      seen += d.toString('latin1');
      if (enough(seen)) {
        stream.destroy();
        resolve();
      }
    });
    stream.once('end', () => (enough(seen) ? resolve() : reject(new Error(`log of ${containerId} ended without ${times} × ${JSON.stringify(text)}: ${seen}`))));
  });
}

/** Resolves once no network matches the label filter: looked at again on each of the daemon's network destroy events. */
export async function networksGone(docker: Docker, label: string[]): Promise<void> {
  const events = (await docker.getEvents({ filters: { type: ['network'], event: ['destroy'] } })) as NodeJS.ReadableStream & { destroy(): void };
  try {
    await new Promise<void>((resolve, reject) => {
      const look = () => docker.listNetworks({ filters: { label } }).then((l) => l.length === 0 && resolve(), reject);
      events.on('data', look);
      look();
    });
  } finally {
    events.destroy();
  }
}

/**
 * The serverless end-to-end test's worker image (issue 33 item 5): the base from `serverless-image.sh` (Debian trixie
 * with Python and what the client's worker imports, built once per Docker daemon under a lock), plus a layer with
 * - the client's own serverless code, unmodified: test/fixtures/vast-cli-serverless (see its SOURCE.md), at
 *   /opt/vast-cli, put on PYTHONPATH by the entrypoint;
 * - the test's worker, model and SDK client scripts (test/fixtures/serverless-worker), at /opt/worker, with
 *   `start.sh` as the entrypoint;
 * - /opt/pyshim/Crypto, a link to Debian's pycryptodome (see below), on PYTHONPATH too.
 * The layer is made by `docker create` + an archive put + `docker commit` (no registry, no build context), and tagged
 * by the hash of what it holds: a changed file makes a new image, an unchanged one is reused.
 */
import { spawnSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type Docker from 'dockerode';

const SCRIPT = join(import.meta.dirname, 'serverless-image.sh');
const FIXTURES = join(import.meta.dirname, '..', 'fixtures');
export const VAST_CLI_DIR = join(FIXTURES, 'vast-cli-serverless');
export const WORKER_DIR = join(FIXTURES, 'serverless-worker');
const REPO = 'gpuplane-test-serverless-worker';

/** The base image's reference (`gpuplane-test-serverless:<recipe hash>`), built first when this daemon lacks it. */
export function serverlessBaseImage(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', [SCRIPT], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += String(d)));
    child.stderr.on('data', (d) => (err += String(d)));
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      const tag = out.trim().split('\n').pop() ?? '';
      if (code === 0 && /^gpuplane-test-serverless:[0-9a-f]{16}$/.test(tag)) resolve(tag);
      else reject(new Error(`building the serverless test image failed (${signal ?? `exit ${code}`}):\n${err.slice(-4000)}${out}`));
    });
  });
}

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : [p];
  }).sort();
}

/** The worker image's reference, made from the base and the fixtures when this daemon lacks it. */
export async function serverlessWorkerImage(docker: Docker): Promise<string> {
  const base = await serverlessBaseImage();
  const hash = createHash('sha256').update(base).update(readFileSync(import.meta.filename));
  for (const f of [...files(VAST_CLI_DIR), ...files(WORKER_DIR)]) hash.update(relative(FIXTURES, f)).update('\0').update(readFileSync(f));
  const tag = `${REPO}:${hash.digest('hex').slice(0, 16)}`;
  if (await docker.getImage(tag).inspect().then(() => true, () => false)) return tag;

  const stage = mkdtempSync(join(tmpdir(), 'gpuplane-serverless-layer-'));
  try {
    cpSync(VAST_CLI_DIR, join(stage, 'opt', 'vast-cli'), { recursive: true });
    cpSync(WORKER_DIR, join(stage, 'opt', 'worker'), { recursive: true });
    // The worker imports pycryptodome as `Crypto` (as PyPI's package installs it); Debian's python3-pycryptodome
    // installs the same library as `Cryptodome` (beside the old PyCrypto's name). A `Crypto` on PYTHONPATH names it.
    mkdirSync(join(stage, 'opt', 'pyshim'));
    symlinkSync('/usr/lib/python3/dist-packages/Cryptodome', join(stage, 'opt', 'pyshim', 'Crypto'));
    const tar = spawnSync('tar', ['-C', stage, '--owner=0', '--group=0', '-c', 'opt'], { maxBuffer: 64 * 1024 * 1024 });
    if (tar.status !== 0) throw new Error(`tar failed: ${String(tar.stderr)}`);
    const c = await docker.createContainer({ Image: base, Cmd: ['true'], Labels: { 'gpuplane.test': 'serverless-image' } });
    try {
      await c.putArchive(tar.stdout, { path: '/' });
      const [repo, version] = tag.split(':');
      await c.commit({ repo, tag: version, changes: ['ENTRYPOINT ["/opt/worker/start.sh"]', 'CMD []'] });
    } finally {
      await c.remove({ force: true });
    }
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
  return tag;
}

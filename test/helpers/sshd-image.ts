/**
 * The end-to-end tests' image with a real OpenSSH server, python3 and rsync (Debian bookworm, minbase), for SSH,
 * scp, sftp and rsync into an image that brings its own sshd (issue 31). The recipe is `sshd-image.sh` beside this
 * file: debootstrap from the machine's apt mirror, then `docker import`, tagged by the script's own hash, built once
 * per Docker daemon under a lock (concurrent test files, and .ci/run's early background build, wait for one build).
 * A build that fails rejects: the test that needs the image fails, it never skips.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const SCRIPT = join(import.meta.dirname, 'sshd-image.sh');

/** The image's reference (`gpuplane-test-sshd:<recipe hash>`), built first when this daemon lacks it. */
export function sshdImage(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', [SCRIPT], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += String(d)));
    child.stderr.on('data', (d) => (err += String(d)));
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      const tag = out.trim().split('\n').pop() ?? '';
      if (code === 0 && /^gpuplane-test-sshd:[0-9a-f]{16}$/.test(tag)) resolve(tag);
      else reject(new Error(`building the sshd test image failed (${signal ?? `exit ${code}`}):\n${err.slice(-4000)}${out}`));
    });
  });
}

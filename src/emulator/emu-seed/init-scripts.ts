/**
 * Issue 34 item 2: init scripts (GPUPLANE_EMU_INIT_DIR), the executables of one folder run once the emulator
 * listens, one after another in name order, each with the emulator's URL in GPUPLANE_URL and VAST_URL (and the owner's
 * bootstrap key, when one was configured, in GPUPLANE_API_KEY). Their output goes to the log, line by line. A script
 * that fails is logged with its exit code and the next one runs: the emulator becomes ready all the same, and
 * `/readyz` says which failed (`emulator_init.failed`), so a CI job can check.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, readdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';

/** A script still running after this long is killed and counted as failed: readiness must not wait forever. */
export const INIT_SCRIPT_TIMEOUT_MS = 10 * 60_000;

export interface InitScriptsReport {
  scripts: number;
  failed: { script: string; exit_code: number | null }[];
}

/** The folder's executable regular files, by name (code-point order, as `ls` in the C locale lists them). */
async function scriptsIn(dir: string, log: Logger): Promise<string[]> {
  const names = (await readdir(dir)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const out: string[] = [];
  for (const name of names) {
    const path = join(dir, name);
    if (!(await stat(path)).isFile()) continue;
    try {
      await access(path, constants.X_OK);
      out.push(name);
    } catch {
      log.warn({ dir, script: name }, 'emulator init: skipped a file that is not executable (chmod +x to run it)');
    }
  }
  return out;
}

function runOne(dir: string, name: string, env: NodeJS.ProcessEnv, log: Logger, timeoutMs: number): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(join(dir, name), [], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const timer = setTimeout(() => {
      log.error({ script: name, timeout_ms: timeoutMs }, 'emulator init: script timed out; killed');
      child.kill('SIGKILL');
    }, timeoutMs);
    for (const [stream, pipe] of [['stdout', child.stdout], ['stderr', child.stderr]] as const) {
      let rest = '';
      pipe.on('data', (chunk: Buffer) => {
        const lines = (rest + chunk.toString()).split('\n');
        rest = lines.pop()!;
        for (const line of lines) log.info({ script: name, stream }, line);
      });
      pipe.on('end', () => rest && log.info({ script: name, stream }, rest));
    }
    child.once('error', (err) => {
      clearTimeout(timer);
      log.error({ script: name, err }, 'emulator init: script did not start');
      resolve(null);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

export async function runInitScripts(opts: { dir: string; url: string; apiKey?: string; log: Logger; timeoutMs?: number }): Promise<InitScriptsReport> {
  const { url, log } = opts;
  // Absolute: each script runs with the folder as its working directory, where a relative path would not resolve.
  const dir = resolve(opts.dir);
  const scripts = await scriptsIn(dir, log);
  const env: NodeJS.ProcessEnv = { ...process.env, GPUPLANE_URL: url, VAST_URL: url };
  if (opts.apiKey !== undefined) env.GPUPLANE_API_KEY = opts.apiKey;
  const report: InitScriptsReport = { scripts: scripts.length, failed: [] };
  for (const name of scripts) {
    log.info({ script: name }, 'emulator init: running');
    const code = await runOne(dir, name, env, log, opts.timeoutMs ?? INIT_SCRIPT_TIMEOUT_MS);
    if (code === 0) {
      log.info({ script: name }, 'emulator init: done');
    } else {
      log.error({ script: name, exit_code: code }, `emulator init: ${name} failed (exit code ${code ?? 'none: killed or not started'}); the emulator still becomes ready`);
      report.failed.push({ script: name, exit_code: code });
    }
  }
  return report;
}

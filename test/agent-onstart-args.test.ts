// A long onstart reaches the container whole (issue 29 item 10). The server accepts a gzip+base64 onstart that
// decodes to up to 256 KiB (spec: longer scripts are sent gzip-compressed then base64-encoded); quoted into the
// entrypoint's one script argument, anything over Linux's 128 KiB per argument made a container that could never
// start (E2BIG). The entrypoint is run here with the real shell, as the container would run it.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildContainerSpec, type MachineLimits } from '../src/agent/container-spec.js';
import { ONSTART_PIECE_UNITS, onstartArgs } from '../src/agent/onstart-args.js';
import { ONSTART_DECODED_MAX_BYTES } from '../src/instances/instances-constants.js';
import type { DesiredInstanceT } from '../src/protocol/agent-protocol-schemas.js';

/** Linux's limit on one argument (MAX_ARG_STRLEN: 32 pages), the terminating NUL included. */
const MAX_ARG_BYTES = 128 * 1024;

const machine = { machineId: 3, owner: 'test-owner', cpuCores: 8, ramMb: 32_000, gpuDevices: false } as MachineLimits;

function desired(onstart: string | null): DesiredInstanceT {
  return {
    instance_id: 7, generation: 1, image: 'busybox', runtype: 'ssh', args: null, env: {}, onstart, ssh_keys: [], ports: [],
    hostname: null, gpu_indices: [], cpu_share: 1, memory_share: 1, disk: 8, running: true,
  } as unknown as DesiredInstanceT;
}

/** Runs the entrypoint's file-writing steps (not sshd, onstart or the endless wait) in a scratch root; the onstart.sh written. */
function writtenOnstart(entrypoint: string[]): string {
  const root = mkdtempSync(join(tmpdir(), 'gpuplane-onstart-'));
  try {
    const [shell, flag, script, ...args] = entrypoint;
    const steps = script.split('\n').filter((l) => !/^(while|sh \/root|if command|trap)/.test(l)).join('\n').replaceAll('/root', root);
    execFileSync(shell, [flag, steps, ...args]);
    return readFileSync(join(root, 'onstart.sh'), 'utf8');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

describe('onstart through the entrypoint', () => {
  test('a script as long as the server accepts decoded reaches onstart.sh whole; no argument over the kernel limit', () => {
    // Lines of text with quotes, dollars, backslashes and multi-byte characters, to the server's decoded limit.
    const line = `echo "it's \\$HOME \\\\ – ü 😀" '$(no)'\n`;
    let onstart = line.repeat(Math.floor((ONSTART_DECODED_MAX_BYTES * 0.95) / Buffer.byteLength(line)));
    onstart = onstart.slice(0, -1);
    assert.ok(Buffer.byteLength(onstart) > MAX_ARG_BYTES, 'longer than one argument may be');
    const { entrypoint } = buildContainerSpec(desired(onstart), machine, {}, '0.0.0.0');
    for (const arg of entrypoint!) assert.ok(Buffer.byteLength(arg) + 1 <= MAX_ARG_BYTES, `an argument of ${Buffer.byteLength(arg)} bytes`);
    assert.equal(writtenOnstart(entrypoint!), `${onstart}\n`);
  });

  test('pieces never split a surrogate pair, and join to the script', () => {
    const onstart = `${'a'.repeat(ONSTART_PIECE_UNITS - 1)}😀${'b'.repeat(10)}`;
    const pieces = onstartArgs(onstart);
    assert.equal(pieces.join(''), onstart);
    assert.equal(pieces[0].length, ONSTART_PIECE_UNITS - 1);
    for (const p of pieces) assert.equal(Buffer.from(p, 'utf8').toString('utf8'), p, 'each piece is valid text');
    assert.deepEqual(onstartArgs(null), []);
    assert.deepEqual(onstartArgs('  \n'), []);
  });

  test('a short script: written as given, with its quotes', () => {
    const onstart = `echo "it's $HOME"\nprintf '%s\\n' done`;
    const { entrypoint } = buildContainerSpec(desired(onstart), machine, {}, '0.0.0.0');
    assert.equal(writtenOnstart(entrypoint!), `${onstart}\n`);
  });
});

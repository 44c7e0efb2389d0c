// A long onstart script through the CLI (issue 29 item 10). The spec: "Maximum 4048 characters; longer scripts are
// sent gzip-compressed then base64-encoded". The CLI refused such a script (the server's 400); now it encodes it
// itself, the server decodes it, and the instance gets the script as written. Against a real server (virtual clock).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ONSTART_DECODED_MAX_BYTES, ONSTART_MAX_CHARS } from '../src/instances/instances-constants.js';
import { instanceSteps, useServer } from './cli-helpers.js';

const server = useServer();
const { sdk, offer, instance } = instanceSteps(server);

/** A script of about `chars` characters, lines that do not compress to nothing. */
function script(chars: number): string {
  const lines: string[] = [];
  for (let i = 0; lines.join('\n').length < chars; i++) lines.push(`echo "step ${i}: it's \${HOME:-/root}" # ${(i * 7919).toString(36)}`);
  return lines.join('\n');
}

describe('create instance with a long onstart', () => {
  test('--onstart FILE over the limit: sent gzip+base64, the instance has the script as written', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpuplane-onstart-'));
    try {
      const text = script(3 * ONSTART_MAX_CHARS);
      assert.ok(text.length > ONSTART_MAX_CHARS);
      writeFileSync(join(dir, 'onstart.sh'), text);
      const r = await server.cli(['create', 'instance', String(await offer()), '--image', 'alpine', '--ssh', '--onstart', join(dir, 'onstart.sh'), '--raw']);
      assert.equal(r.code, 0, r.stderr);
      const inst = await sdk().instances.show(JSON.parse(r.stdout).new_contract);
      assert.equal(inst.onstart, text);

      // The same for --onstart-cmd, and a script at the limit goes as it is.
      const atLimit = script(ONSTART_MAX_CHARS).slice(0, ONSTART_MAX_CHARS);
      const cmd = await server.cli(['create', 'instance', String(await offer()), '--image', 'alpine', '--ssh', '--onstart-cmd', atLimit, '--raw']);
      assert.equal(cmd.code, 0, cmd.stderr);
      assert.equal((await sdk().instances.show(JSON.parse(cmd.stdout).new_contract)).onstart, atLimit);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('update instance --onstart over the limit: encoded too', async () => {
    const id = await instance();
    const text = script(2 * ONSTART_MAX_CHARS);
    const r = await server.cli(['update', 'instance', String(id), '--onstart', text]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await sdk().instances.show(id)).onstart, text);
  });

  test('a script longer than the server takes even encoded: a usage error, nothing sent', async () => {
    const r = await server.cli(['create', 'instance', '5', '--image', 'alpine', '--onstart-cmd', 'x'.repeat(ONSTART_DECODED_MAX_BYTES + 1)], { GPUPLANE_URL: 'http://127.0.0.1:1' });
    assert.equal(r.code, 2);
    assert.match(r.stderr, new RegExp(`--onstart-cmd: the script is ${ONSTART_DECODED_MAX_BYTES + 1} bytes; the server takes at most ${ONSTART_DECODED_MAX_BYTES}`));
  });
});

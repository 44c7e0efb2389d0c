// The first start tells a new user where to go (issue 29 item 12): besides the owner's key, printed once, the
// console's address and how to get into it (the console signs in with a password, and the owner is made without one:
// the command that sets one), and how the CLI takes the key. Printed only where it is true: no console line when no
// console is built. A real `gpuplane serve` process, as `npm start` runs it.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ownerAnnouncement } from '../src/main.js';
import { OWNER_EMAIL } from '../src/users/users-service.js';
import { serve } from './helpers/spawn.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('the first start', () => {
  test('prints the key once, the console\'s URL, and the command that gives the owner a password', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpuplane-first-start-'));
    dirs.push(dir);
    const s = await serve({ GPUPLANE_DATABASE_URL: `sqlite:${join(dir, 'g.db')}`, GPUPLANE_SIM_MACHINES: '3' });
    try {
      const out = s.output();
      const key = /shown only this once:\s+(\S+)/.exec(out)?.[1];
      assert.ok(key, out);
      assert.match(out, /Command line: `npx gpuplane set api-key KEY`, with the key above/);
      // The console is where the line says, and it is the console.
      const at = new RegExp(`Web console: (http://\\S+/) \\(it signs in with an e-mail and a password\\)`).exec(out);
      assert.ok(at, out);
      assert.equal(at[1], `${s.url}/`);
      const page = await fetch(at[1], { headers: { accept: 'text/html' } });
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<div id="root">|<script/);
      assert.match(out, /`npx gpuplane admin set-password` sets one/);
      assert.match(out, new RegExp(`sign in there as ${OWNER_EMAIL.replace('.', '\\.')}\\.`));
    } finally {
      await s.stop();
    }
    // A second start on the same database prints none of it: the key exists.
    const again = await serve({ GPUPLANE_DATABASE_URL: `sqlite:${join(dir, 'g.db')}`, GPUPLANE_SIM_MACHINES: '3' });
    try {
      assert.doesNotMatch(again.output(), /shown only this once|Web console/);
    } finally {
      await again.stop();
    }
  });

  test('without a built console, nothing is said of one', () => {
    const text = ownerAnnouncement('gpk_example', { publicUrl: 'http://127.0.0.1:8080', consoleDir: join(tmpdir(), 'no-console-here') });
    assert.match(text, /shown only this once:\n\n {4}gpk_example\n/);
    assert.doesNotMatch(text, /console/i);
  });
});

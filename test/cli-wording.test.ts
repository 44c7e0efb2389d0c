// What the CLI prints says what is true, and what it shows can be asked for (issue 29 items 9 and 10), against a real
// server (virtual clock): one instance is "instance", not "instances"; `--columns` takes the names of the fields the
// CLI shows (`status_msg`, printed by `show instance`) and the headers its tables print (`gpuD_$/h`).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { instanceSteps, useServer } from './cli-helpers.js';

const server = useServer();
const { instance } = instanceSteps(server);

describe('CLI wording', () => {
  test('stopping or starting one instance names it in the singular', async () => {
    const id = await instance();
    const stop = await server.cli(['stop', 'instances', String(id)]);
    assert.equal(stop.code, 0, stop.stderr);
    assert.equal(stop.stdout.trim(), `stopping instance ${id}`);
    const start = await server.cli(['start', 'instances', String(id)]);
    assert.equal(start.stdout.trim(), `starting instance ${id}`);
  });

  test('an instance not yet reported by its host reads provisioning, in the table and the record, never -', async () => {
    const id = await instance();
    const list = await server.cli(['show', 'instances', '--columns', 'id,actual_status']);
    assert.match(list.stdout, new RegExp(`^\\s*${id}\\s+provisioning$`, 'm'), list.stdout);
    const one = await server.cli(['show', 'instance', String(id)]);
    assert.match(one.stdout, /^actual_status\s+provisioning$/m, one.stdout);
  });

  test('--columns takes a field show instance prints (status_msg), and a header a table prints', async () => {
    const id = await instance();
    const chosen = await server.cli(['show', 'instances', '--columns', 'id,status_msg,intended_status,Status']);
    assert.equal(chosen.code, 0, chosen.stderr);
    assert.deepEqual(chosen.stdout.split('\n')[0].trim().split(/\s{2,}/), ['ID', 'Message', 'Intended', 'Status']);
    assert.match(chosen.stdout, new RegExp(`^\\s*${id}\\s`, 'm'));
    // Without --columns the table is as before: the extra fields are there only when asked for.
    const plain = await server.cli(['show', 'instances']);
    assert.doesNotMatch(plain.stdout.split('\n')[0], /Message|Intended/);

    const machines = await server.cli(['show', 'machines', '--all', '--columns', 'id,gpuD_$/h']);
    assert.equal(machines.code, 0, machines.stderr);
    assert.deepEqual(machines.stdout.split('\n')[0].trim().split(/\s{2,}/), ['ID', 'gpuD_$/h']);
    const unknown = await server.cli(['show', 'machines', '--columns', 'id,colour']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown column colour/);
  });
});

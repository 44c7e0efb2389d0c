// Volumes, serverless endpoints and workergroups through the CLI (run in the test's process) against a real server, with their
// error paths.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer } from './cli-helpers.js';

const server = useServer();
const cli = (args: string[], env: Record<string, string | undefined> = {}) => server.cli(args, env);
const OFFLINE = { GPUPLANE_URL: 'http://127.0.0.1:1' };

describe('volumes', () => {
  test('search (query, table with units), create, show, delete', async () => {
    const raw = await cli(['search', 'volumes', 'disk_space>=100', '--limit', '3', '--raw']);
    assert.equal(raw.code, 0, raw.stderr);
    const offers = JSON.parse(raw.stdout);
    assert.ok(offers.length > 0 && offers.length <= 3);
    for (const o of offers) {
      assert.ok(o.disk_space >= 100);
      // vastai's default volume query: verified=true external=false disk_space>=1.
      assert.equal(o.verified, true);
      assert.equal(o.external, false);
    }
    const scores = offers.map((o: { score: number }) => o.score);
    assert.deepEqual(scores, [...scores].sort((a, b) => b - a), 'ordered by score, best first, by default');
    const cheap = JSON.parse((await cli(['search', 'volumes', '-o', 'storage_cost', '--limit', '5', '--raw'])).stdout);
    const costs = cheap.map((o: { storage_cost: number }) => o.storage_cost);
    assert.deepEqual(costs, [...costs].sort((a, b) => a - b), '-o storage_cost sorts ascending');
    const one = JSON.parse((await cli(['search', 'volumes', '--limit', '1', '--raw'])).stdout)[0];
    const ten = JSON.parse((await cli(['search', 'volumes', '--storage', '10', '--limit', '1', '--raw'])).stdout)[0];
    assert.equal(ten.id, one.id);
    assert.ok(one.storage_total_cost > 0);
    assert.ok(Math.abs(ten.storage_total_cost - 10 * one.storage_total_cost) < 1e-9, '--storage GB are priced in (default 1 GB)');
    const all = JSON.parse((await cli(['search', 'volumes', '-n', '--raw'])).stdout);
    const defaults = JSON.parse((await cli(['search', 'volumes', '--raw'])).stdout);
    assert.ok(all.some((o: { verified: boolean; external: boolean }) => !o.verified || o.external), '-n drops the default filters');
    assert.ok(defaults.every((o: { verified: boolean; external: boolean }) => o.verified && !o.external));
    const table = await cli(['search', 'volumes', '--limit', '2']);
    assert.match(table.stdout.split('\n')[0], /^\s*ID\s+Disk GB\s+\$\/GB\/month\s+Disk MB\/s/);

    const c = await cli(['create', 'volume', String(offers[0].id), '-s', '20', '-n', 'datasets', '--raw']);
    assert.equal(c.code, 0, c.stderr);
    const vid = JSON.parse(c.stdout).volume_id;
    const shown = await cli(['show', 'volumes']);
    assert.match(shown.stdout, new RegExp(`^\\s*${vid}\\s+datasets\\s+20\\s`, 'm'));
    assert.equal((await cli(['delete', 'volume', String(vid)])).code, 0);
    const again = await cli(['delete', 'volume', String(vid)]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /HTTP 404/);
  });

  test('errors: an unknown field and a bad size fail before sending', async () => {
    assert.equal((await cli(['search', 'volumes', 'disk_spase>1'], OFFLINE)).code, 2);
    assert.equal((await cli(['create', 'volume', '3', '-s', 'big'], OFFLINE)).code, 2);
  });
});

describe('endpoints and workergroups', () => {
  test('create, show, update and delete an endpoint and a workergroup under it', async () => {
    const e = await cli(['create', 'endpoint', '--endpoint_name', 'cli-llama', '--max_workers', '5', '--target_util', '0.8', '--raw']);
    assert.equal(e.code, 0, e.stderr);
    const eid = JSON.parse(e.stdout).result;
    assert.equal((await cli(['update', 'endpoint', String(eid), '--max_workers', '7'])).code, 0);
    const list = await cli(['show', 'endpoints']);
    assert.match(list.stdout.split('\n')[0], /^\s*ID\s+Name\s+Min load\s+Target util\s+Cold mult\s+Cold workers\s+Max workers$/);
    assert.match(list.stdout, new RegExp(`^\\s*${eid}\\s+cli-llama\\s+\\S+\\s+0\\.8\\s+\\S+\\s+\\S+\\s+7$`, 'm'));

    const t = JSON.parse((await cli(['create', 'template', '--name', 'wg', '--image', 'alpine', '--raw'])).stdout).template;
    const w = await cli(['create', 'workergroup', '--template_hash', t.hash_id, '--endpoint_id', String(eid), '--search_params', 'gpu_ram>=10 num_gpus=1', '--raw']);
    assert.equal(w.code, 0, w.stderr);
    const wid = JSON.parse(w.stdout).id;
    const wl = await cli(['show', 'workergroups']);
    assert.match(wl.stdout, new RegExp(`^\\s*${wid}\\s+${eid}\\s+${t.hash_id}\\s+gpu_ram>=10 num_gpus=1`, 'm'));
    const load = await cli(['emu', 'load', String(eid), '250']);
    assert.equal(load.code, 0, load.stderr);
    assert.equal(load.stdout.trim(), `endpoint ${eid} load 250`);
    assert.equal((await cli(['emu', 'advance', '120'])).code, 0);
    // What the autoscaler did: its workers and its log.
    const workers = JSON.parse((await cli(['get', 'endpt-workers', String(eid), '--raw'])).stdout);
    const group = JSON.parse((await cli(['show', 'workergroups', '--raw'])).stdout).find((g: { id: number }) => g.id === wid);
    assert.ok(group.workers.length > 0);
    assert.deepEqual(workers.map((x: { id: number }) => x.id), [...group.workers].sort((a: number, b: number) => a - b));
    const table = await cli(['get', 'endpt-workers', String(eid)]);
    assert.match(table.stdout.split('\n')[0], /^\s*Instance\s+Status\s+Started\s+Running since\s+Reliability$/i);
    const logs = await cli(['get', 'endpt-logs', String(eid), '--level', '0']);
    assert.equal(logs.code, 0, logs.stderr);
    assert.match(logs.stdout, new RegExp(`workergroup ${wid}: scale_up`));
    const one = await cli(['get', 'wrkgrp-logs', String(wid), '--tail', '1']);
    assert.equal(one.stdout.trim().split('\n').length, 1);
    assert.match(one.stdout, /workers\): /, 'level 1: with the reason');
    assert.equal((await cli(['get', 'endpt-logs', String(eid), '--level', '7'])).code, 2);
    const replaced = await cli(['update', 'workers', String(wid)]);
    assert.equal(replaced.code, 0, replaced.stderr);
    assert.match(replaced.stdout, new RegExp(`workergroup ${wid}: ${group.workers.length} worker\\(s\\) replaced`));
    assert.equal((await cli(['delete', 'workergroup', String(wid)])).code, 0);
    assert.equal((await cli(['delete', 'endpoint', String(eid)])).code, 0);
    const gone = await cli(['delete', 'endpoint', String(eid)]);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /HTTP 404/);
  });

  test('errors: a malformed search_params, nothing to update, a bad number', async () => {
    const q = await cli(['create', 'workergroup', '--search_params', 'gpu_nam=1'], OFFLINE);
    assert.equal(q.code, 2);
    assert.match(q.stderr, /unknown field "gpu_nam"/);
    assert.equal((await cli(['update', 'endpoint', '3'], OFFLINE)).code, 2);
    assert.equal((await cli(['create', 'endpoint', '--max_workers', 'many'], OFFLINE)).code, 2);
  });
});

// GET /api/v0/gpu_names/unique/ (contract §3): the vastai client calls it with no key at start-up and needs
// `{"gpu_names": [...]}`; without it, it cannot start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';

forEachDialect(
  'gpu_names with no fleet',
  (app) => {
    test('no key needed; an empty list until a fleet exists', async () => {
      const res = await app().request('GET', '/api/v0/gpu_names/unique/', { key: null });
      assert.equal(res.status, 200);
      assert.equal(res.headers['content-type'], 'application/json');
      assert.deepEqual(res.body, { gpu_names: [] });
    });
  },
  { config: { GPUPLANE_SIM_MACHINES: '0' } },
);

forEachDialect('gpu_names with the simulated fleet', (app) => {
  test('served with and without the trailing slash, key or no key (even a bad one)', async () => {
    const replies = [
      await app().request('GET', '/api/v0/gpu_names/unique/', { key: null }),
      await app().request('GET', '/api/v0/gpu_names/unique', { key: null }),
      await app().request('GET', '/api/v0/gpu_names/unique/', { key: 'gpk_not_a_real_key_000000000000' }),
      await app().request('GET', '/api/v0/gpu_names/unique/?api_key=whatever'),
    ];
    for (const res of replies) {
      assert.equal(res.status, 200, res.raw);
      assert.deepEqual(res.body, replies[0].body);
    }
  });

  test('each model name once, as strings, and only names the fleet has', async () => {
    const names: string[] = (await app().request('GET', '/api/v0/gpu_names/unique/', { key: null })).body.gpu_names;
    assert.ok(names.length > 0, 'a fleet of machines has GPU models');
    assert.ok(names.every((n) => typeof n === 'string' && n.length > 0));
    assert.equal(new Set(names).size, names.length, 'unique');
    assert.deepEqual(names, await app().services.fleetNames());
  });
});

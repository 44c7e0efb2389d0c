// Threats covered: a template's registry password leaking (to other users, to logs, through search filters or the
// database), private templates leaking to other accounts, and hostile search filters reaching SQL or crashing the
// service (500) instead of being refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { forEachDialect } from './helpers/harness.js';

const logLines: string[] = [];
const sink = new Writable({
  write(chunk, _enc, done) {
    logLines.push(String(chunk));
    done();
  },
});
const SECRET = 'P4ss-never-shown-7c1e';

forEachDialect(
  'templates security',
  (app) => {
    const login = { docker_login_repo: 'registry.example.com', docker_login_user: 'bob', docker_login_pass: SECRET };

    test('the registry password never reaches the log, another user, or the stored row in clear', async () => {
      const { api_key: other } = await app().createUser();
      const created = await app().request('POST', '/api/v0/template/', { body: { name: 'sec', image: 'img', private: false, ...login } });
      assert.equal(created.status, 200, created.raw);
      const t = created.body.template;
      const edited = await app().request('PUT', '/api/v0/template/', { body: { hash_id: t.hash_id, docker_login_pass: SECRET } });
      assert.equal(edited.status, 200);
      const all = await app().request('GET', '/api/v0/template/', { key: other });
      assert.ok(!all.raw.includes(SECRET));
      const leaked = logLines.filter((l) => l.includes(SECRET));
      assert.deepEqual(leaked, [], 'no log line carries the password');
      const rows = await app().store.db.selectFrom('templates').selectAll().execute();
      assert.ok(!JSON.stringify(rows).includes(SECRET));
      assert.ok(!edited.body.template.hash_id.includes(SECRET));
    });

    test('another account cannot reach a private template by id, hash_id, or any filter', async () => {
      const { api_key: other } = await app().createUser();
      const t = (await app().request('POST', '/api/v0/template/', { body: { name: 'hidden-one', image: 'img', private: true, ...login } })).body.template;
      for (const filters of [{}, { id: { eq: t.id } }, { hash_id: { in: [t.hash_id] } }, { private: { eq: true } }, { name: { neq: 'x' } }]) {
        const res = await app().request('GET', `/api/v0/template/?select_filters=${encodeURIComponent(JSON.stringify(filters))}`, { key: other });
        assert.equal(res.status, 200);
        assert.ok(!res.body.templates.some((x: any) => x.id === t.id), JSON.stringify(filters));
      }
      assert.equal((await app().request('DELETE', '/api/v0/template/', { key: other, body: { hash_id: t.hash_id } })).status, 404);
    });

    test('hostile filters: SQL in field names, operators or values is refused or compared literally', async () => {
      const cases: Array<[unknown, number]> = [
        [{ 'name; DROP TABLE templates; --': { eq: 'x' } }, 400],
        [{ name: { "eq' OR 1=1 --": 'x' } }, 400],
        [{ name: { eq: "x' OR '1'='1" } }, 200],
        [{ name: { in: Array.from({ length: 1001 }, (_, i) => `n${i}`) } }, 400],
        [{ id: { eq: { nested: 1 } } }, 400],
        [{ id: { in: [[1]] } }, 400],
        ['{"__proto__": {"eq": 1}}', 400],
        ['{"constructor": {"eq": 1}}', 400],
        ['{"toString": {"eq": 1}}', 400],
        ['{"name": {"__proto__": 1}}', 400],
      ];
      for (const [filters, status] of cases) {
        const raw = typeof filters === 'string' ? filters : JSON.stringify(filters);
        const res = await app().request('GET', `/api/v0/template/?select_filters=${encodeURIComponent(raw)}`);
        assert.equal(res.status, status, `${raw} → ${res.raw}`);
        if (status === 400) assert.match(res.body.msg, /select_filters/);
        if (status === 200) assert.equal(res.body.templates.filter((x: any) => x.name === "x' OR '1'='1").length, 0);
      }
      // The table is still there.
      assert.equal((await app().request('GET', '/api/v0/template/')).status, 200);
    });

    test('oversized ids and bodies are 400s, not database errors', async () => {
      for (const body of [{ template_id: 2 ** 40 }, { template_id: -1 }, { template_id: 1.5 }, { template_id: 'abc' }]) {
        const res = await app().request('DELETE', '/api/v0/template/', { body });
        assert.equal(res.status, 400, `${JSON.stringify(body)} → ${res.raw}`);
      }
      const huge = await app().request('POST', '/api/v0/template/', { body: { name: 'x'.repeat(201), image: 'img' } });
      assert.equal(huge.status, 400);
      const bigFilters = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`f${i}`, { eq: 'x'.repeat(10) }]));
      const big = await app().request('POST', '/api/v0/template/', { body: { name: 'x', image: 'img', extra_filters: bigFilters } });
      assert.equal(big.status, 400);
    });
  },
  { log: pino({ level: 'trace' }, sink) },
);

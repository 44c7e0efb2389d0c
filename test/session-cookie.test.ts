// The UI session's cookie, read (platform/auth.ts sessionCookie) and written (login/sessions.ts sessionCookieHeader)
// with the `cookie` package: what a browser sends and gets, exactly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSetCookie } from 'cookie';
import { sessionCookie } from '../src/platform/auth.js';
import { sessionCookieHeader } from '../src/login/sessions.js';

const SECRET = 'gps_AbC-12_xyz';

test('the session secret is found among other cookies, with or without spaces after the semicolons', () => {
  assert.equal(sessionCookie(`gpuplane_session=${SECRET}`), SECRET);
  assert.equal(sessionCookie(`theme=dark; gpuplane_session=${SECRET}; lang=en`), SECRET);
  assert.equal(sessionCookie(`theme=dark;gpuplane_session=${SECRET};lang=en`), SECRET);
});

test('no session cookie, an empty one, or a value no secret has is no credential', () => {
  assert.equal(sessionCookie(undefined), null);
  assert.equal(sessionCookie(''), null);
  assert.equal(sessionCookie('theme=dark'), null);
  assert.equal(sessionCookie('gpuplane_session='), null);
  assert.equal(sessionCookie('xgpuplane_session=gps_abc'), null, 'another cookie whose name ends the same');
  assert.equal(sessionCookie('gpuplane_session="gps_abc"'), null, 'quoted');
  assert.equal(sessionCookie('gpuplane_session=gps_%41bc'), null, 'percent-encoded: taken as sent, not decoded');
  assert.equal(sessionCookie('gpuplane_session=gps abc'), null);
  assert.equal(sessionCookie(`gpuplane_session=${'a'.repeat(513)}`), null, 'longer than any secret');
});

test('the Set-Cookie of a session: HttpOnly, SameSite=Strict, Path=/, its Max-Age, Secure only when asked', () => {
  assert.equal(sessionCookieHeader(SECRET, 604800.7, false), `gpuplane_session=${SECRET}; Max-Age=604800; Path=/; HttpOnly; SameSite=Strict`);
  assert.deepEqual(parseSetCookie(sessionCookieHeader(SECRET, 60, true)), {
    name: 'gpuplane_session', value: SECRET, maxAge: 60, path: '/', httpOnly: true, secure: true, sameSite: 'strict',
  });
});

test('the removal at logout: an empty value, Max-Age=0, the same attributes', () => {
  assert.equal(sessionCookieHeader(null, 604800, true), 'gpuplane_session=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Strict');
});

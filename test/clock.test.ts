// platform/clock.ts durationText: the wording messages build from duration constants.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { durationText } from '../src/platform/clock.js';
import { TFA_AUTH_WINDOW_S, TFA_CHALLENGE_TTL_S } from '../src/tfa/tfa-constants.js';
import { TEAM_INVITE_TTL_S } from '../src/teams/teams-service.js';
import { EMAIL_VERIFY_TTL_S } from '../src/login/login-service.js';

test('durations read as the spec says them', () => {
  assert.equal(durationText(TFA_AUTH_WINDOW_S), '30 minutes');
  assert.equal(durationText(TFA_CHALLENGE_TTL_S), '10 minutes');
  assert.equal(durationText(EMAIL_VERIFY_TTL_S), '24 hours');
  assert.equal(durationText(TEAM_INVITE_TTL_S), '7 days');
});

test('the largest unit that divides the duration, never "1 <unit>"', () => {
  assert.equal(durationText(30), '30 seconds');
  assert.equal(durationText(60), '60 seconds');
  assert.equal(durationText(90), '90 seconds');
  assert.equal(durationText(3600), '60 minutes');
  assert.equal(durationText(2 * 3600), '2 hours');
  assert.equal(durationText(86400 + 3600), '25 hours');
});

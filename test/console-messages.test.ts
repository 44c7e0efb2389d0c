/**
 * The console shows a person a sentence, not the API's schema message (issue 29 item 9: "body.password must NOT have
 * fewer than 8 characters" appeared as is on the sign-up page): console/src/lib/messages.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { humanMessage } from '../console/src/lib/messages.js';

test('schema messages become sentences about the field as the form names it', () => {
  assert.equal(humanMessage('body.password must NOT have fewer than 8 characters'), 'Password must be at least 8 characters long.');
  assert.equal(humanMessage('body.new_password must NOT have more than 1024 characters'), 'New password must be at most 1024 characters long.');
  assert.equal(humanMessage('body.email must match pattern "^[^\\s@]+@[^\\s@]+$"'), 'Enter a valid e-mail address.');
  assert.equal(humanMessage('body.code is required'), 'Code is required.');
  assert.equal(humanMessage('body.disk_space must NOT have fewer than 1 characters'), 'Disk space must be at least 1 character long.');
});

test('other messages are shown as the API wrote them', () => {
  assert.equal(humanMessage('wrong username or password'), 'wrong username or password');
  assert.equal(humanMessage('body.disk must be number'), 'body.disk must be number');
});

/**
 * Logic of the console's settings pages without React: permission checkboxes (console/src/lib/permissions.ts), the
 * Machines page (hosting.ts), Security settings (security.ts) and the Emulator panel (emulator.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CATEGORIES, describeGrant, grantedCategories, permissionDoc } from '../console/src/lib/permissions.js';
import { listingBody, machineState, occupancy, occupancySummary, secondsToUtcInput, utcInputToSeconds } from '../console/src/lib/hosting.js';
import { backupCodesFile, describeProvisioningUri, normalizeCode, normalizePhone } from '../console/src/lib/security.js';
import { parseDuration } from '../console/src/lib/emulator.js';
import { parsePermissionDoc } from '../src/platform/permissions.js';

test('the checked categories make a permission document the server accepts; unknown names are dropped', () => {
  const doc = permissionDoc(['instance_write', 'instance_read', 'nonsense']);
  assert.deepEqual(doc, { api: { instance_read: {}, instance_write: {} } });
  assert.deepEqual(parsePermissionDoc(doc), doc);
  assert.deepEqual(grantedCategories(doc), ['instance_read', 'instance_write']);
  assert.equal(describeGrant(permissionDoc(CATEGORIES)), 'Full access');
  assert.equal(describeGrant(null), 'Full access');
  assert.equal(describeGrant({ api: {} }), 'No access');
});

test('a machine\'s state is a word, offline first; occupancy letters are words per GPU', () => {
  assert.deepEqual(machineState({ online: false, listed: true, rentable: true, maintenance: [] }), { word: 'Offline', tone: 'bad' });
  assert.equal(machineState({ online: true, listed: true, rentable: true, maintenance: [] }).word, 'Listed');
  assert.equal(machineState({ online: true, listed: false, rentable: false, maintenance: [] }).word, 'Unlisted');
  assert.equal(machineState({ online: true, listed: true, rentable: false, maintenance: [{}] }).word, 'Maintenance');
  assert.deepEqual(occupancy('DIx'), ['rented on demand', 'rented interruptible', 'idle']);
  assert.equal(occupancySummary('DxDx'), '2 rented on demand, 2 idle');
  assert.equal(occupancySummary(''), 'no GPUs');
});

test('the listing form: blank keeps a value (null), prices are dollars, mistakes name their field', () => {
  const form = { price_gpu: '0.45', price_disk: '', price_inetu: '0.01', price_inetd: '', price_min_bid: '0.2', min_chunk: '1', end_date: '2030-01-31' };
  assert.deepEqual(listingBody(4, form), {
    machine: 4, price_gpu: 0.45, price_disk: null, price_inetu: 0.01, price_inetd: null, price_min_bid: 0.2, min_chunk: 1,
    end_date: Date.parse('2030-01-31T00:00:00Z') / 1000, credit_discount_max: null, duration: null, vol_size: null, vol_price: null,
  });
  assert.deepEqual(listingBody(4, { ...form, price_gpu: '-1' }), { field: 'price_gpu', error: 'Enter a price in dollars, 0 or more.' });
  assert.deepEqual(listingBody(4, { ...form, min_chunk: '0' }), { field: 'min_chunk', error: 'Enter a whole number of GPUs, 1 or more.' });
  assert.equal((listingBody(4, { ...form, end_date: 'soon' }) as { field: string }).field, 'end_date');
  assert.equal(utcInputToSeconds('2030-01-01T10:30'), Date.parse('2030-01-01T10:30:00Z') / 1000);
  assert.equal(secondsToUtcInput(utcInputToSeconds('2030-01-01T10:30')), '2030-01-01T10:30');
  assert.ok(Number.isNaN(utcInputToSeconds('tomorrow')));
});

test('security: codes and phone numbers as typed; the backup codes file; the otpauth URI described', () => {
  assert.equal(normalizeCode(' 123 456 '), '123456');
  assert.equal(normalizeCode('12345'), null);
  assert.equal(normalizePhone('+1 (555) 010-9999'), '+15550109999');
  assert.equal(normalizePhone('555 0101'), null);
  const file = backupCodesFile('a@example.com', ['AAAA-BBBB-CCCC', 'DDDD-EEEE-FFFF'], new Date(0));
  assert.match(file, /a@example\.com/);
  assert.deepEqual(file.split('\n').filter((l) => /^[A-Z]{4}-/.test(l)), ['AAAA-BBBB-CCCC', 'DDDD-EEEE-FFFF']);
  assert.deepEqual(describeProvisioningUri('otpauth://totp/gpuplane:ada%40example.com?secret=ABC&issuer=gpuplane'), { issuer: 'gpuplane', account: 'ada@example.com' });
  assert.deepEqual(describeProvisioningUri('https://example.com'), { issuer: null, account: null });
});

test('emulator: a clock advance typed as a duration', () => {
  assert.equal(parseDuration('90'), 90);
  assert.equal(parseDuration('15m'), 900);
  assert.equal(parseDuration('1h30m'), 5400);
  assert.equal(parseDuration('2d'), 172_800);
  assert.equal(parseDuration('0'), null);
  assert.equal(parseDuration('1h banana'), null);
  assert.equal(parseDuration(''), null);
});

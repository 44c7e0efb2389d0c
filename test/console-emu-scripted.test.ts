// The Emulator page's scripted failures and transitions (console/src/lib/emu-scripted.ts, issue 34): each form's
// strings become exactly the control API's body (contract §2), bad fields are reported per field, and the lists'
// rows read as words.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  buildHostEvent, buildRequestFault, buildTransition, DEFAULT_HOST_EVENT, DEFAULT_REQUEST_FAULT, DEFAULT_TRANSITION, durationText,
  eventCancellable, eventDetailText, eventDuration, eventMachinesText, eventWhenText, faultEffectText, faultMatchText, faultOddsText,
  bootSecondsText, parseInstanceId, transitionModeText, transitionScopeText,
  type HostEventForm, type RequestFaultForm, type TransitionForm,
} from '../console/src/lib/emu-scripted.js';

const rf = (f: Partial<RequestFaultForm>): RequestFaultForm => ({ ...DEFAULT_REQUEST_FAULT, ...f });
const ev = (f: Partial<HostEventForm>): HostEventForm => ({ ...DEFAULT_HOST_EVENT, ...f });
const tr = (f: Partial<TransitionForm>): TransitionForm => ({ ...DEFAULT_TRANSITION, ...f });

test('a 429 rule on a route: the status, its Retry-After, the method; defaults (probability 1, any method) are left out', () => {
  assert.deepEqual(buildRequestFault(rf({ route: ' /api/v0/bundles/ ', method: 'POST', retryAfter: '2' })), {
    body: { method: 'POST', route: '/api/v0/bundles/', status: 429, retry_after: 2 }, errors: null,
  });
  assert.deepEqual(buildRequestFault(rf({ route: '*', retryAfter: '' })).body, { route: '*', status: 429 });
});

test('a 5xx by category with a probability, a count, a seed and added latency; no Retry-After on a 5xx', () => {
  const b = buildRequestFault(rf({ category: 'instance_write', status: '503', retryAfter: '9', probability: '0.5', count: '3', seed: '42', latencyMs: '250' }));
  assert.deepEqual(b.body, { category: 'instance_write', status: 503, probability: 0.5, count: 3, seed: 42, latency_ms: 250 });
});

test('a timeout sends timeout (and its drop time when given, no status); latency only sends only the delay', () => {
  assert.deepEqual(buildRequestFault(rf({ route: '/api/v0/instances/*', outcome: 'timeout' })).body, { route: '/api/v0/instances/*', timeout: true });
  assert.deepEqual(buildRequestFault(rf({ route: '/api/v0/instances/*', outcome: 'timeout', latencyMs: '1500' })).body, { route: '/api/v0/instances/*', timeout: true, latency_ms: 1500 });
  assert.deepEqual(buildRequestFault(rf({ method: 'GET', outcome: 'latency', latencyMs: '800' })).body, { method: 'GET', latency_ms: 800 });
});

test('request-fault form errors name their field', () => {
  assert.deepEqual(buildRequestFault(rf({})).errors, { route: 'Say which requests: a route (* for every one), a method or a permission category.' });
  assert.ok(buildRequestFault(rf({ route: 'api/v0/x' })).errors?.route);
  assert.deepEqual(Object.keys(buildRequestFault(rf({ route: '*', probability: '1.5' })).errors ?? {}), ['probability']);
  assert.deepEqual(Object.keys(buildRequestFault(rf({ route: '*', probability: 'half' })).errors ?? {}), ['probability']);
  assert.deepEqual(Object.keys(buildRequestFault(rf({ route: '*', latencyMs: '70000' })).errors ?? {}), ['latencyMs']);
  assert.deepEqual(Object.keys(buildRequestFault(rf({ route: '*', outcome: 'latency', latencyMs: '' })).errors ?? {}), ['latencyMs']);
  assert.deepEqual(Object.keys(buildRequestFault(rf({ route: '*', count: '0' })).errors ?? {}), ['count']);
  assert.deepEqual(Object.keys(buildRequestFault(rf({ route: '*', seed: '1.5' })).errors ?? {}), ['seed']);
  assert.deepEqual(Object.keys(buildRequestFault(rf({ route: '*', retryAfter: '-1' })).errors ?? {}), ['retryAfter']);
  assert.deepEqual(Object.keys(buildRequestFault(rf({ route: '*', status: '404' })).errors ?? {}), ['status']);
});

test('a rule in words: which requests, what they get, how often', () => {
  const r = { id: 1, fired: 2, method: 'POST' as const, route: '/api/v0/bundles/', status: 429, retry_after: 2, probability: 0.5, count: 3, seed: 7 };
  assert.equal(faultMatchText(r), 'POST /api/v0/bundles/');
  assert.equal(faultEffectText(r), '429, Retry-After 2 s');
  assert.equal(faultOddsText(r), '50% of requests, at most 3 times, seed 7');
  assert.equal(faultMatchText({ method: '*', category: 'instance_write' }), 'any method, category instance_write');
  assert.equal(faultMatchText({ route: '*' }), 'every request');
  assert.equal(faultMatchText({ route: '*', method: 'GET' }), 'GET, every route');
  // A listed rule: unset fields are null.
  const listed = { id: 2, fired: 0, matched: 0, method: '*', route: null, category: 'misc', probability: 1, status: null, retry_after: null, latency_ms: 800, timeout: false, count: null, seed: null };
  assert.equal(faultMatchText(listed), 'any method, category misc');
  assert.equal(faultEffectText(listed), '800 ms delay');
  assert.equal(faultOddsText(listed), 'always');
  assert.equal(faultEffectText({ ...listed, timeout: true, latency_ms: 0 }), 'no reply (dropped after 30 s)');
  assert.equal(faultEffectText({ ...listed, status: 502, latency_ms: 0 }), '502');
  assert.equal(faultEffectText({ status: 503, latency_ms: 500 }), '503 after 500 ms');
  assert.equal(faultEffectText({ timeout: true }), 'no reply (dropped after 30 s)');
  assert.equal(faultEffectText({ latency_ms: 800 }), '800 ms delay');
  assert.equal(faultOddsText({ count: 1 }), 'always, at most 1 time');
});

test('an outbid wave in 60 s on half the fleet; host offline for 5 min on given machines; now is no `after`', () => {
  assert.deepEqual(buildHostEvent(ev({})), { body: { kind: 'outbid_wave', after: 60, fraction: 0.5 }, errors: null });
  assert.deepEqual(buildHostEvent(ev({ kind: 'host_offline', after: '0', target: 'ids', machineIds: '3, 7 7', duration: '5m', seed: '9' })).body,
    { kind: 'host_offline', machine_ids: [3, 7], duration: 300, seed: 9 });
  assert.deepEqual(buildHostEvent(ev({ kind: 'outbid_wave', after: '', target: 'machines', machines: '2' })).body, { kind: 'outbid_wave', machines: 2 });
  // How the host goes: only for host_offline, only when chosen.
  assert.deepEqual(buildHostEvent(ev({ kind: 'host_offline', fault: 'offline', after: '0' })).body, { kind: 'host_offline', fraction: 0.5, duration: 300, fault: 'offline' });
  assert.deepEqual(buildHostEvent(ev({ kind: 'outbid_wave', fault: 'offline', after: '0' })).body, { kind: 'outbid_wave', fraction: 0.5 });
});

test('slow pull takes its pull seconds and duration; a GPU lost may have no duration (it stays lost) and an index', () => {
  assert.deepEqual(buildHostEvent(ev({ kind: 'slow_pull', after: '1h30m', duration: '10m', pullSeconds: '600' })).body,
    { kind: 'slow_pull', after: 5400, fraction: 0.5, duration: 600, pull_seconds: 600 });
  assert.deepEqual(buildHostEvent(ev({ kind: 'gpu_lost', after: '0', duration: '', gpuIndex: '1' })).body, { kind: 'gpu_lost', fraction: 0.5, gpu_index: 1 });
  // An empty index or seed sends nothing (the server chooses by its seed).
  assert.deepEqual(buildHostEvent(ev({ kind: 'gpu_lost', after: '0', duration: '', gpuIndex: '', seed: '' })).body, { kind: 'gpu_lost', fraction: 0.5 });
  assert.equal(eventDuration('outbid_wave'), 'none');
  assert.equal(eventDuration('host_offline'), 'required');
  assert.equal(eventDuration('gpu_lost'), 'optional');
});

test('host-event form errors name their field', () => {
  const keys = (f: Partial<HostEventForm>) => Object.keys(buildHostEvent(ev(f)).errors ?? {});
  assert.deepEqual(keys({ after: 'soon' }), ['after']);
  assert.deepEqual(keys({ target: 'ids', machineIds: '' }), ['machineIds']);
  assert.deepEqual(keys({ target: 'ids', machineIds: '3, x' }), ['machineIds']);
  assert.deepEqual(keys({ target: 'fraction', fraction: '0' }), ['fraction']);
  assert.deepEqual(keys({ target: 'machines', machines: '' }), ['machines']);
  assert.deepEqual(keys({ kind: 'host_offline', duration: '' }), ['duration']);
  assert.deepEqual(keys({ kind: 'host_offline', duration: 'long' }), ['duration']);
  assert.deepEqual(keys({ kind: 'slow_pull', pullSeconds: '' }), ['pullSeconds']);
  assert.deepEqual(keys({ kind: 'gpu_lost', gpuIndex: '-1' }), ['gpuIndex']);
  assert.deepEqual(keys({ kind: 'gpu_lost', gpuIndex: '64' }), ['gpuIndex']);
  assert.deepEqual(keys({ seed: '1.5' }), ['seed']);
  // The duration of an outbid wave is not asked for, so a leftover value is not an error.
  assert.deepEqual(keys({ kind: 'outbid_wave', duration: 'long' }), []);
});

test('an event in words: when against the clock, its machines, its details; pending and active can be cancelled', () => {
  assert.equal(eventWhenText(1_000_060, 1_000_000), '1970-01-12 13:47 UTC (in 1 min)');
  assert.equal(eventWhenText(1_000_000, 1_000_300), '1970-01-12 13:46 UTC (5 min ago)');
  assert.equal(eventWhenText(1_000_000, undefined), '1970-01-12 13:46 UTC');
  assert.equal(eventMachinesText([3, 7]), '3, 7');
  assert.equal(eventMachinesText([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]), '1, 2, 3, 4, 5, 6, 7, 8 and 2 more');
  assert.equal(eventMachinesText([]), 'none');
  assert.equal(eventDetailText({ kind: 'slow_pull', pull_seconds: 600, duration: 600 }), 'pulls take 600 s, for 10 min');
  assert.equal(eventDetailText({ kind: 'gpu_lost', gpu_index: 0 }), 'GPU 0, stays lost');
  assert.equal(eventDetailText({ kind: 'outbid_wave' }), '—');
  assert.equal(eventDetailText({ kind: 'outbid_wave', instance_ids: [4, 9] }), 'outbid instances 4, 9');
  assert.equal(eventDetailText({ kind: 'host_offline', fault: 'no_heartbeat', duration: 300 }), 'no heartbeat, for 5 min');
  // As listed: unset fields are null.
  assert.equal(eventDetailText({ kind: 'gpu_lost', gpu_index: null, duration: null, pull_seconds: null }), 'stays lost');
  assert.equal(eventCancellable('pending'), true);
  assert.equal(eventCancellable('active'), true);
  assert.equal(eventCancellable('done'), false);
});

test('transitions: per kind or per instance, a delay in virtual seconds; errors name their field', () => {
  assert.deepEqual(buildTransition(tr({})), { body: { kind: 'instance', mode: 'manual' }, errors: null });
  assert.deepEqual(buildTransition(tr({ scope: 'instance', instanceId: '42', mode: 'delay', seconds: '2m' })).body, { kind: 'instance', instance_id: 42, mode: 'delay', seconds: 120 });
  assert.deepEqual(buildTransition(tr({ mode: 'delay', seconds: '0' })).body, { kind: 'instance', mode: 'delay', seconds: 0 });
  assert.deepEqual(buildTransition(tr({ mode: 'immediate', seconds: 'junk' })).body, { kind: 'instance', mode: 'immediate' });
  assert.deepEqual(Object.keys(buildTransition(tr({ scope: 'instance', instanceId: '' })).errors ?? {}), ['instanceId']);
  assert.deepEqual(Object.keys(buildTransition(tr({ mode: 'delay', seconds: 'later' })).errors ?? {}), ['seconds']);
  assert.equal(transitionScopeText({ mode: 'manual' }), 'every instance');
  assert.equal(transitionScopeText({ mode: 'manual', instance_id: 42 }), 'instance 42');
  assert.equal(transitionModeText({ mode: 'manual' }), 'manual (advance it)');
  assert.equal(transitionModeText({ mode: 'delay', seconds: 90 }), 'after 90 s');
  assert.equal(transitionModeText({ mode: 'immediate' }), 'immediate');
  assert.equal(transitionModeText({ mode: 'delay', seconds: null }), 'after a delay');
  assert.equal(transitionScopeText({ kind: 'instance', instance_id: null, mode: 'manual' }), 'every instance');
  assert.equal(bootSecondsText({ min: 30, max: 90 }), '30 to 90 s to boot');
  assert.equal(bootSecondsText({ min: 60, max: 60 }), '1 min to boot');
  assert.equal(parseInstanceId(' 7 '), 7);
  assert.equal(parseInstanceId('0'), null);
  assert.equal(parseInstanceId('x'), null);
});

test('durations read as a person writes them', () => {
  assert.equal(durationText(45), '45 s');
  assert.equal(durationText(90), '90 s');
  assert.equal(durationText(300), '5 min');
  assert.equal(durationText(5400), '1 h 30 min');
  assert.equal(durationText(7200), '2 h');
  assert.equal(durationText(172_800), '2 d');
});

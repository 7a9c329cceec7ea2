// Pure units: ids, the generated wrappers against contract/protocol.json, error mapping, the
// enqueue reply reader, payload helpers, the JSON member scanner. No Redis.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import * as calls from '../src/generated/calls.js';
import { ERROR_CODES } from '../src/generated/errors.js';
import { FUNCTIONS, KEY_KINDS } from '../src/generated/protocol.js';
import { BatonError, fromErrorReply } from '../src/baton_error.js';
import { readEnqueueReply } from '../src/enqueue_reply.js';
import { findTopLevelMember } from '../src/json_span.js';
import { hasUnsafeNumbers, isUuidV7, LosslessNumber, newTaskId, parseLossless, stringifyJson, Worker } from '../src/index.js';
import { REPO_ROOT } from './helpers/paths.js';

test('task ids are UUIDv7 by Baton rule: time prefix, version 7, variant 10, strictly increasing', () => {
  const now = Date.now();
  const ids = Array.from({ length: 10000 }, () => newTaskId());
  for (const id of ids) assert.ok(isUuidV7(id), id);
  assert.deepEqual([...ids].sort(), ids, 'sorted in creation order');
  assert.equal(new Set(ids).size, ids.length);
  const ms = parseInt((ids[0] as string).replace(/-/g, '').slice(0, 12), 16);
  assert.ok(Math.abs(ms - now) < 5000, 'the first 48 bits are Unix ms');
  // A clock that steps back keeps the order.
  const a = newTaskId(now + 100000);
  const b = newTaskId(now);
  assert.ok(b > a);
});

test('the default consumer name is <service>:<host>:<pid>:<6 hex>:node', () => {
  const name = new Worker({ service: 'billing', logger: false }).consumerName;
  const prefix = `billing:${hostname()}:${process.pid}:`;
  assert.ok(name.startsWith(prefix), name);
  assert.match(name.slice(prefix.length), /^[0-9a-f]{6}:node$/);
  assert.notEqual(new Worker({ service: 'billing', logger: false }).consumerName, name);
});

test('every generated wrapper sends the KEYS of contract/protocol.json, in order', () => {
  const protocol = JSON.parse(readFileSync(join(REPO_ROOT, 'contract', 'protocol.json'), 'utf8')) as {
    functions: Record<string, { keys: string[]; argv: string[]; per_item?: string[] }>;
  };
  assert.deepEqual(Object.values(FUNCTIONS).map((f) => f.name).sort(), Object.keys(protocol.functions).sort());
  const ns = 'shop';
  const type = 'email';
  const expectKeys = (fn: string) => protocol.functions[fn]?.keys.map((k) => {
    const spec = (KEY_KINDS as Record<string, { pattern: string; typed: boolean } | undefined>)[k];
    if (spec === undefined) return k === 'cron_state' ? 'baton:cron:state' : `?${k}`;
    return spec.pattern.replace('{NS}', `{${ns}}`).replace(/TYPE$/, type);
  });
  const a = { group: 'g', consumer: 'c' };
  const made = {
    baton_v2_version: calls.version(),
    baton_v2_configure: calls.configure(ns, [{ setting: 'lease_ms', value: '5000' }]),
    baton_v2_enqueue: calls.enqueue(ns, type, []),
    baton_v2_dequeue: calls.dequeue(ns, type, { ...a, count: 1, leaseMs: 0 }),
    baton_v2_ack: calls.ack(ns, type, a, [{ id: 'i', sid: '1-0' }]),
    baton_v2_fail: calls.fail(ns, type, { ...a, id: 'i', sid: '1-0', kind: 'error', error: 'e', stack: 's', baseMs: 1, maxMs: 2, jitter: 0 }),
    baton_v2_reclaim: calls.reclaim(ns, type, { count: 1, baseMs: 1, maxMs: 2, jitterSeed: 3, reaper: 'r' }),
    baton_v2_extend: calls.extend(ns, type, { ...a, leaseMs: 0 }, [{ id: 'i', sid: '1-0' }]),
    baton_v2_promote: calls.promote(ns, type, { limit: 5 }),
    baton_v2_cancel: calls.cancel(ns, type, { id: 'i' }),
    baton_v2_dlq_replay: calls.dlqReplay(ns, type, { id: 'i', payload: '' }),
    baton_v2_dlq_delete: calls.dlqDelete(ns, type, { id: 'i' }),
    baton_v2_rescue_start: calls.rescueStart(ns, type, { group: 'g', rescueGroup: 'g.rescue' }),
    baton_v2_rescue_finish: calls.rescueFinish(ns, type, { force: 0, limit: 1 }),
    baton_v2_cron_mark: calls.cronMark({ job: 'j', tick: 1 }),
  };
  for (const [fn, call] of Object.entries(made)) {
    assert.equal(call.fn, fn);
    assert.deepEqual(call.keys, expectKeys(fn), fn);
    const spec = protocol.functions[fn] as { argv: string[]; per_item?: string[] };
    const perItems = fn === 'baton_v2_configure' || fn === 'baton_v2_ack' || fn === 'baton_v2_extend' ? 1 : 0;
    assert.equal(call.argv.length, spec.argv.length + perItems * (spec.per_item?.length ?? 0), fn);
  }
  // enqueue: the unique key of each item that has one comes after the fixed KEYS; n is filled in.
  const e = calls.enqueue(ns, type, [{ id: 'a', payload: '{}', maxRetry: 3, delaySeconds: 0, createdAt: 1, executionTimeout: '', extra: '', runAtMs: 0, uniqueKey: 'k', uniqueTtlS: 5 }], ['k']);
  assert.equal(e.keys.at(-1), `baton:v2:{${ns}}:unique:k`);
  assert.equal(e.argv[0], 1);
});

test('error replies map to contract codes, keeping the field', () => {
  const inv = fromErrorReply('BATON_INVALID max_retry (task 2): must be an integer 0..25', 'enqueue');
  assert.equal(inv.code, 'invalid_argument');
  assert.equal(inv.message, 'enqueue: max_retry (task 2): must be an integer 0..25');
  assert.equal(fromErrorReply('BATON_NOT_FOUND task x').code, 'not_found');
  assert.equal(fromErrorReply('BATON_CONFLICT cannot').code, 'conflict');
  const oom = fromErrorReply("OOM command not allowed when used memory > 'maxmemory'.");
  assert.equal(oom.code, 'resource_exhausted');
  assert.ok(oom.retryable);
  assert.equal(fromErrorReply('ERR Function not found').code, 'version_mismatch');
  assert.equal(fromErrorReply('WEIRD thing').code, 'internal');
  assert.equal(Object.keys(ERROR_CODES).length, 8);
});

test('baton_v2_enqueue replies are flat (status, detail per task) and read in call order', () => {
  const ids = ['a', 'b', 'c', 'd'];
  const reply = ['queued', '1722489600000-0', 'scheduled', 1722489660000, 'duplicate', 'active', 'unique_conflict', 'h'];
  assert.deepEqual(readEnqueueReply(reply, ids), [
    { status: 'queued', taskId: 'a', streamId: '1722489600000-0' },
    { status: 'scheduled', taskId: 'b', dueMs: 1722489660000 },
    { status: 'duplicate', taskId: 'c', state: 'active' },
    { status: 'unique_conflict', taskId: 'd', holderId: 'h' },
  ]);
  assert.deepEqual(readEnqueueReply([], []), []);
  const internal = (e: unknown) => e instanceof BatonError && e.code === 'internal' && e.message.includes('baton_v2_enqueue');
  // The wrong length: one value short, one too many, the old nested pairs, not an array.
  assert.throws(() => readEnqueueReply(['queued', '1-0', 'duplicate'], ['a', 'b']), internal);
  assert.throws(() => readEnqueueReply(['queued', '1-0', 'duplicate', 'active', 'x'], ['a', 'b']), internal);
  assert.throws(() => readEnqueueReply([['queued', '1-0'], ['duplicate', 'active']], ['a', 'b']), internal);
  assert.throws(() => readEnqueueReply(['queued', '1-0'], []), internal);
  assert.throws(() => readEnqueueReply(null, ['a']), internal);
  // An unknown status.
  assert.throws(() => readEnqueueReply(['queued', '1-0', 'lost', 'x'], ['a', 'b']), internal);
});

test('lossless parse and stringify round-trip every number exactly', () => {
  const text = '{"a":12345678901234567890,"b":123456789012345678901234567890,"c":1.10,"d":-0,"e":1e308,"f":0.1,"g":3,"h":1.2345678901234567890123}';
  const v = parseLossless(text) as Record<string, unknown>;
  assert.equal(v.a, 12345678901234567890n);
  assert.equal(v.g, 3);
  assert.equal(v.f, 0.1);
  assert.ok(v.h instanceof LosslessNumber);
  assert.equal(stringifyJson({ big: 2n ** 70n, exact: new LosslessNumber('1.10'), n: 1 }), '{"big":1180591620717411303424,"exact":1.10,"n":1}');
  assert.equal(hasUnsafeNumbers('{"a":9007199254740993}'), true);
  assert.equal(hasUnsafeNumbers('{"a":9007199254740991,"b":1.5}'), false);
});

test('findTopLevelMember returns the exact text of a member', () => {
  const doc = '{ "a" : {"x":[1,"}"]}, "payload" :{"n": 1.10 , "s":"\\"}"} ,"z":null}';
  assert.equal(findTopLevelMember(doc, 'payload'), '{"n": 1.10 , "s":"\\"}"}');
  assert.equal(findTopLevelMember(doc, 'a'), '{"x":[1,"}"]}');
  assert.equal(findTopLevelMember(doc, 'z'), 'null');
  assert.equal(findTopLevelMember(doc, 'nope'), undefined);
  assert.equal(findTopLevelMember('[1]', 'a'), undefined);
});

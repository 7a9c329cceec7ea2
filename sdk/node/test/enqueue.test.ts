// The producer against a real redis-server: outcomes, batching, validation, cancel, settings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BatonError, Client, EnqueueError, isUuidV7, parseTaskDocument, rawJson } from '../src/index.js';
import { RedisServer } from './helpers/redis_server.js';
import { type DeliveredValues, dequeueValues, record, serverAndClient, uniqueNs } from './helpers/baton.js';

const env = serverAndClient();

test('enqueue: queued, then duplicate for the same id; the entry holds the exact fields', async () => {
  const ns = uniqueNs();
  const before = Math.floor(Date.now() / 1000);
  const first = await env.client.enqueue(ns, 'email', rawJson('{"to": "ada@example.com", "n": 1.10}'), { maxRetry: 2, executionTimeout: 30, headers: { who: 'test' } });
  assert.equal(first.status, 'queued');
  assert.ok(isUuidV7(first.taskId), first.taskId);
  const again = await env.client.enqueue(ns, 'email', { x: 1 }, { taskId: first.taskId });
  assert.deepEqual(again, { status: 'duplicate', taskId: first.taskId, state: 'queued' });
  const delivered = await dequeueValues(env.server.redis(), ns, 'email');
  assert.equal(delivered.length, 1);
  const f = delivered[0] as DeliveredValues;
  assert.equal(f.id, first.taskId);
  assert.equal(f.sid, (first as { streamId: string }).streamId);
  assert.equal(f.attempt, '0');
  assert.equal(f.payload, '{"to": "ada@example.com", "n": 1.10}');
  assert.equal(f.max_retry, '2');
  assert.equal(f.execution_timeout, '30');
  assert.deepEqual(JSON.parse(f.extra as string), { headers: { who: 'test' } });
  const createdAt = Number(f.created_at);
  assert.ok(createdAt >= before && createdAt <= before + 5, `created_at in seconds: ${createdAt}`);
  assert.equal(await record(env.server.redis(), ns, first.taskId), `queued|email|0|${f.sid}`);
});

test('enqueue: delayed and run-at tasks are scheduled on the server clock', async () => {
  const ns = uniqueNs();
  const t0 = Date.now();
  const delayed = await env.client.enqueue(ns, 'report', {}, { delaySeconds: 60 });
  assert.equal(delayed.status, 'scheduled');
  assert.ok(delayed.status === 'scheduled' && delayed.dueMs >= t0 + 59000 && delayed.dueMs <= Date.now() + 61000);
  const at = new Date(Date.now() + 3600_000);
  const runAt = await env.client.enqueue(ns, 'report', {}, { runAt: at });
  assert.ok(runAt.status === 'scheduled' && runAt.dueMs === at.getTime());
  assert.equal(await env.server.redis().zcard(`baton:v2:{${ns}}:scheduled:report`), 2);
  // The envelope's delay_seconds says when it was meant to run, as the other SDKs write it.
  const body = JSON.parse(String(await env.server.redis().hget(`baton:v2:{${ns}}:bodies`, runAt.taskId))) as { delay_seconds: string };
  assert.ok(Math.abs(Number(body.delay_seconds) - 3600) <= 1, `delay_seconds ${body.delay_seconds}`);
  await assert.rejects(env.client.enqueue(ns, 'report', {}, { runAt: at, delaySeconds: 5 }),
    (e: unknown) => e instanceof BatonError && e.field === 'run_at' && /cannot be combined with delaySeconds/.test(e.message));
  await assert.rejects(env.client.enqueue(ns, 'report', {}, { runAt: Date.now() + 400 * 86400_000 }),
    (e: unknown) => e instanceof BatonError && e.field === 'run_at' && /at most 31536000 s/.test(e.message));
});

test('enqueue: a unique key refuses a second task while held', async () => {
  const ns = uniqueNs();
  const a = await env.client.enqueue(ns, 'sync', {}, { uniqueKey: 'user-7', uniqueTtlSeconds: 60 });
  const b = await env.client.enqueue(ns, 'sync', {}, { uniqueKey: 'user-7', uniqueTtlSeconds: 60 });
  assert.equal(a.status, 'queued');
  assert.deepEqual(b, { status: 'unique_conflict', taskId: b.taskId, holderId: a.taskId });
  await assert.rejects(env.client.enqueue(ns, 'sync', {}, { uniqueKey: 'k' }), (e: BatonError) => e.field === 'unique_ttl');
});

test('enqueueMany: one round trip, results in request order across types and namespaces', async () => {
  const ns = uniqueNs();
  const ns2 = uniqueNs();
  const requests = Array.from({ length: 600 }, (_, i) => ({
    namespace: i % 3 === 0 ? ns2 : ns, taskType: i % 2 === 0 ? 'even' : 'odd', payload: { i },
    options: i === 5 ? { delaySeconds: 10 } : {},
  }));
  const results = await env.client.enqueueMany(requests);
  assert.equal(results.length, 600);
  assert.equal(results[5]?.status, 'scheduled');
  assert.equal(results.filter((r) => r.status === 'queued').length, 599);
  assert.equal(new Set(results.map((r) => r.taskId)).size, 600);
  // Ids made in one process sort in creation order.
  const ids = results.map((r) => r.taskId);
  assert.deepEqual([...ids].sort(), ids);
  const entries = await dequeueValues(env.server.redis(), ns, 'odd', 1000);
  assert.deepEqual(entries.map((e) => JSON.parse(e.payload).i), requests.map((r, i) => (r.namespace === ns && r.taskType === 'odd' && i !== 5 ? i : -1)).filter((i) => i >= 0));
  assert.ok(await env.server.redis().sismember('baton:v2:namespaces', ns2));
});

test('enqueueMany failing part-way: the error has every task id and the confirmed results; a retry with them is safe', async () => {
  const allowed = uniqueNs();
  const refused = uniqueNs();
  // A Redis user that may only write the first namespace's keys: its call succeeds, the other fails.
  // (Every producer reads the partition counts, baton:v2:partitions.)
  await env.server.redis().call('ACL', 'SETUSER', 'halfway', 'on', 'nopass', '+@all', 'allchannels', `~baton:v2:{${allowed}}:*`, '~baton:v2:namespaces',
    '%R~baton:v2:partitions');
  const limited = await Client.connect({ redis: env.server.url.replace('redis://', 'redis://halfway:x@') });
  const requests = [
    { namespace: allowed, taskType: 'a', payload: { i: 0 } },
    { namespace: refused, taskType: 'b', payload: { i: 1 } },
    { namespace: allowed, taskType: 'a', payload: { i: 2 } },
  ];
  try {
    const e = await limited.enqueueMany(requests).then(() => undefined, (err: unknown) => err);
    assert.ok(e instanceof EnqueueError, String(e));
    assert.ok(e instanceof BatonError);
    assert.equal(e.taskIds.length, 3);
    assert.ok(e.taskIds.every(isUuidV7));
    assert.deepEqual(e.results.map((r) => r?.status), ['queued', undefined, 'queued']);
    assert.equal(e.results[0]?.taskId, e.taskIds[0]);
    assert.match(e.message, /2 of 3 tasks confirmed/);
    // The retry (with the rights now) reuses the ids: nothing twice.
    const again = await env.client.enqueueMany(requests.map((r, i) => ({ ...r, options: { taskId: e.taskIds[i] as string } })));
    assert.deepEqual(again.map((r) => r.status), ['duplicate', 'queued', 'duplicate']);
    assert.equal((await dequeueValues(env.server.redis(), allowed, 'a')).length, 2);
  } finally {
    await limited.close();
    await env.server.redis().call('ACL', 'DELUSER', 'halfway');
  }
});

test('enqueueDocument: a parsed task document goes in field for field, unknown fields kept', async () => {
  const ns = uniqueNs();
  const text = `{"task_id":"0190f3c1-2a3b-7c4d-8e5f-0123456789ab","namespace":"${ns}","task_type":"doc",` +
    '"payload":{"n": 12345678901234567890, "s": "x"},"max_retry":4,"delay_seconds":0,"created_at":1722489600,' +
    '"execution_timeout":30,"headers":{"by":"doc"},"x_new":[1,2]}';
  const result = await env.client.enqueueDocument(parseTaskDocument(text));
  assert.equal(result.status, 'queued');
  assert.equal(result.taskId, '0190f3c1-2a3b-7c4d-8e5f-0123456789ab');
  const [entry] = await dequeueValues(env.server.redis(), ns, 'doc');
  assert.equal(entry?.payload, '{"n": 12345678901234567890, "s": "x"}');
  assert.equal(entry?.max_retry, '4');
  assert.equal(entry?.created_at, '1722489600');
  assert.equal(entry?.execution_timeout, '30');
  assert.deepEqual(JSON.parse(entry?.extra ?? ''), { headers: { by: 'doc' }, x_new: [1, 2] });
  assert.equal((await env.client.enqueueDocument(parseTaskDocument(text))).status, 'duplicate');
  await assert.rejects(env.client.enqueueDocument({ ...parseTaskDocument(text), maxRetry: 99 }),
    (e: unknown) => e instanceof BatonError && e.field === 'max_retry');
});

test('validation: the field and the rule, and nothing written', async () => {
  const ns = uniqueNs();
  const cases: [() => Promise<unknown>, string, RegExp][] = [
    [() => env.client.enqueue(ns, 'x', {}, { maxRetry: 99 }), 'max_retry', /^max_retry: must be an integer 0\.\.25 \(got 99\)$/],
    [() => env.client.enqueue(ns, 'x', {}, { maxRetry: 2.5 }), 'max_retry', /got 2\.5/],
    [() => env.client.enqueue(ns, 'x', {}, { delaySeconds: -1 }), 'delay_seconds', /0\.\.31536000/],
    [() => env.client.enqueue(ns, 'x', {}, { executionTimeout: 0 }), 'execution_timeout', /1\.\.86400/],
    [() => env.client.enqueue(ns, 'x', [1, 2]), 'payload', /must be a JSON object \(got array\)/],
    [() => env.client.enqueue(ns, 'x', rawJson('{"a":')), 'payload', /not valid JSON/],
    [() => env.client.enqueue(ns, 'x', rawJson('[1]')), 'payload', /got array/],
    [() => env.client.enqueue(ns, 'x', { blob: 'x'.repeat(524278) }), 'payload', /at most 524288 bytes serialized \(got 524289\)/],
    [() => env.client.enqueue(ns, 'bad|type', {}), 'task_type', /must be a string matching/],
    [() => env.client.enqueue('{ns}', 'x', {}), 'namespace', /must be a string matching/],
    [() => env.client.enqueue(ns, 'x', {}, { taskId: '' }), 'task_id', /must be a string matching/],
    [() => env.client.enqueue(ns, 'x', {}, { trace: { traceparent: 'x'.repeat(257) } }), 'trace.traceparent', /at most 256 characters/],
    [() => env.client.enqueue(ns, 'x', {}, { headers: { note: 5 as unknown as string } }), 'headers.note', /must be a string/],
    [() => env.client.enqueue(ns, 'x', {}, { extra: { max_retry: 1 } }), 'extra', /contract field/],
    [() => env.client.enqueueMany([{ namespace: ns, taskType: 'x', payload: {} }, { namespace: ns, taskType: 'x', payload: {}, options: { maxRetry: -1 } }]),
      'max_retry', /^requests\[1\]: max_retry: /],
  ];
  for (const [call, field, message] of cases) {
    await assert.rejects(call(), (e: unknown) => {
      assert.ok(e instanceof BatonError);
      assert.equal(e.code, 'invalid_argument');
      assert.equal(e.field, field);
      assert.match(e.message, message);
      return true;
    });
  }
  assert.deepEqual(await env.server.redis().keys(`baton:v2:{${ns}}:*`), []);
  // A payload at the limit is fine.
  assert.equal((await env.client.enqueue(ns, 'x', { blob: 'x'.repeat(524277) })).status, 'queued');
});

test('payload: raw text byte for byte, big numbers from bigint and LosslessNumber exactly', async () => {
  const ns = uniqueNs();
  const text = '{"big":12345678901234567890123, "f":1.10,"z":-0,"e":1e308,"s":"caf\\u00e9 \u{1F600}"}';
  const r1 = await env.client.enqueue(ns, 'p', rawJson(Buffer.from(text)));
  const r2 = await env.client.enqueue(ns, 'p', { big: 12345678901234567890123n, n: 1 });
  assert.equal(r1.status, 'queued');
  const payloads = (await dequeueValues(env.server.redis(), ns, 'p')).map((e) => e.payload);
  assert.equal(payloads[0], text);
  assert.equal(payloads[1], '{"big":12345678901234567890123,"n":1}');
  assert.equal(r2.status, 'queued');
  assert.throws(() => rawJson(Buffer.from([0x7b, 0xff, 0x7d])), /must be UTF-8/);
});

test('cancel and configure', async () => {
  const ns = uniqueNs();
  const r = await env.client.enqueue(ns, 'c', {}, { delaySeconds: 100 });
  await env.client.cancel(ns, r.taskId);
  assert.equal(await record(env.server.redis(), ns, r.taskId), null);
  assert.equal(await env.server.redis().hget(`baton:v2:{${ns}}:ended`, r.taskId), 'cancelled|c|0|');
  await assert.rejects(env.client.cancel(ns, r.taskId), (e: BatonError) => e.code === 'not_found');
  assert.deepEqual(await env.client.enqueue(ns, 'c', {}, { taskId: r.taskId }), { status: 'duplicate', taskId: r.taskId, state: 'cancelled' });
  const settings = await env.client.configure(ns);
  assert.equal(settings.lease_ms, 30000);
  assert.equal((await env.client.configure(ns, { lease_ms: 5000 })).lease_ms, 5000);
  assert.equal((await env.client.configure(ns, { lease_ms: '' })).lease_ms, 30000);
  await assert.rejects(env.client.configure(ns, { lease_ms: 5 }), (e: BatonError) => e.code === 'invalid_argument' && e.field === 'lease_ms');
});

test('connect: refuses a Redis without the functions library, with the fix in the message', async () => {
  const bare = await RedisServer.start({ loadLibrary: false });
  try {
    await assert.rejects(Client.connect({ redis: bare.url }), (e: BatonError) =>
      e.code === 'version_mismatch' && /version none loaded in Redis, this client needs 2: run 'baton init'/.test(e.message));
  } finally {
    await bare.close();
  }
});

test('connect: unavailable when nothing listens', async () => {
  await assert.rejects(Client.connect({ redis: 'redis://127.0.0.1:1', connectTimeoutMs: 500 }), (e: BatonError) => e.code === 'unavailable' && e.retryable);
});

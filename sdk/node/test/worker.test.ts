// The worker against a real redis-server: handlers per type with their own concurrency, batched
// fetch and acks, payload bytes and parsing, malformed entries, delayed tasks with maintenance.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rawJson, LosslessNumber, type Task } from '../src/index.js';
import { commandOf } from '../src/function_call.js';
import { enqueue as enqueueCall } from '../src/generated/calls.js';
import { sleep, waitFor } from './helpers/redis_server.js';
import { attemptErrors, isDead, isDone, quietWorker, serverAndClient, uniqueNs } from './helpers/baton.js';

const env = serverAndClient();

test('each type runs with its own concurrency; a slow type never holds up another', async () => {
  const ns = uniqueNs();
  const current = { fast: 0, slow: 0 };
  const peak = { fast: 0, slow: 0 };
  const done: string[] = [];
  let releaseSlow!: () => void;
  const slowGate = new Promise<void>((r) => (releaseSlow = r));
  const track = (type: 'fast' | 'slow', work: () => Promise<void>) => async (task: Task) => {
    current[type]++;
    peak[type] = Math.max(peak[type], current[type]);
    try {
      await work();
      done.push(task.taskId);
    } finally {
      current[type]--;
    }
  };
  const worker = quietWorker(env.server.url)
    .register(ns, 'fast', track('fast', async () => { await sleep(20); }), { concurrency: 3 })
    .register(ns, 'slow', track('slow', async () => { await slowGate; }), { concurrency: 1 });
  await worker.start();
  try {
    const slow = await env.client.enqueueMany(Array.from({ length: 3 }, () => ({ namespace: ns, taskType: 'slow', payload: {} })));
    const fast = await env.client.enqueueMany(Array.from({ length: 30 }, (_, i) => ({ namespace: ns, taskType: 'fast', payload: { i } })));
    await waitFor('every fast task done', async () => {
      for (const r of fast) if (!(await isDone(env.server.redis(), ns, r.taskId))) return false;
      return true;
    });
    assert.equal(peak.fast, 3, 'fast ran 3 at a time');
    assert.equal(current.slow, 1, 'slow holds its one slot, and took no more');
    releaseSlow();
    await waitFor('slow tasks done', async () => {
      for (const r of slow) if (!(await isDone(env.server.redis(), ns, r.taskId))) return false;
      return true;
    });
    assert.equal(peak.slow, 1);
    assert.equal(done.length, 33);
    await waitFor('counters', () => worker.stats().succeeded === 33);
  } finally {
    await worker.stop();
  }
});

test('a handler sees the whole envelope and the payload bytes as produced', async () => {
  const ns = uniqueNs();
  const seen: Task[] = [];
  const text = '{"big": 12345678901234567890, "price": 1.10, "s": "\\u00e9\u{1F600}"}';
  const worker = quietWorker(env.server.url, { payloadParse: 'lossless' }).register(ns, 'echo', (task) => {
    seen.push(task);
  });
  await worker.start();
  try {
    const r = await env.client.enqueue(ns, 'echo', rawJson(text), {
      maxRetry: 5, executionTimeout: 7, trace: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
      headers: { from: 'test' }, extra: { x_unknown: { a: [1, 2] } },
    });
    await waitFor('the task ran', () => seen.length === 1);
    const t = seen[0] as Task;
    assert.equal(t.taskId, r.taskId);
    assert.equal(t.namespace, ns);
    assert.equal(t.taskType, 'echo');
    assert.equal(t.maxRetry, 5);
    assert.equal(t.delaySeconds, 0);
    assert.equal(t.executionTimeout, 7);
    assert.ok(Math.abs(t.createdAt - Date.now() / 1000) < 10);
    assert.equal(t.attempt, 1);
    assert.equal(t.payloadText, text);
    assert.deepEqual(t.payloadBytes, Buffer.from(text));
    const p = t.payload as { big: bigint; price: number; s: string };
    assert.equal(p.big, 12345678901234567890n, 'lossless: the big integer is exact');
    assert.equal(p.price, 1.1);
    assert.equal(p.s, '\u00e9\u{1F600}');
    assert.equal(t.trace?.traceparent, '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    assert.deepEqual(t.headers, { from: 'test' });
    assert.deepEqual(t.extra.x_unknown, { a: [1, 2] });
    // The document written back carries the payload verbatim.
    assert.ok(t.toDocument().includes(`"payload":${text}`));
  } finally {
    await worker.stop();
  }
});

test('default JSON.parse payload; the lossless parse is always one call away', async () => {
  const ns = uniqueNs();
  const seen: Task[] = [];
  const worker = quietWorker(env.server.url).register(ns, 'p', (task) => {
    seen.push(task);
  });
  await worker.start();
  try {
    await env.client.enqueue(ns, 'p', rawJson('{"huge":123456789012345678901234567890,"f":1e400}'));
    await waitFor('ran', () => seen.length === 1);
    const t = seen[0] as Task<{ huge: number }>;
    assert.equal(t.payload.huge, 1.2345678901234568e29, 'JSON.parse rounds');
    const lossless = t.payloadLossless() as { huge: bigint; f: LosslessNumber };
    assert.equal(lossless.huge, 123456789012345678901234567890n);
    assert.ok(lossless.f instanceof LosslessNumber);
    assert.equal(lossless.f.toString(), '1e400');
  } finally {
    await worker.stop();
  }
});

test('an entry whose payload is not valid JSON goes to the dead-letter queue as malformed, with the reason', async () => {
  const ns = uniqueNs();
  let ran = 0;
  const worker = quietWorker(env.server.url).register(ns, 'm', () => {
    ran++;
  });
  // Written by a producer that skipped validation (the library only checks the braces).
  const [cmd, args] = commandOf(enqueueCall(ns, 'm', [{
    id: 'bad-1', payload: '{not json}', maxRetry: 3, delaySeconds: 0, createdAt: Math.floor(Date.now() / 1000), executionTimeout: '',
    extra: '', runAtMs: 0, uniqueKey: '', uniqueTtlS: 0,
  }]));
  await env.server.redis().call(cmd, ...args);
  await env.client.enqueue(ns, 'm', {});
  await worker.start();
  try {
    await waitFor('dead-lettered', () => isDead(env.server.redis(), ns, 'm', 'bad-1'));
    const errors = await attemptErrors(env.server.redis(), ns, 'bad-1');
    assert.equal(errors.length, 1);
    assert.equal(errors[0]?.kind, 'malformed');
    assert.match(errors[0]?.error ?? '', /^payload: not valid JSON/);
    await waitFor('the good one ran', () => ran === 1);
    await waitFor('malformed counted', () => worker.stats().malformed === 1);
  } finally {
    await worker.stop();
  }
});

test('delayed tasks run at their due time with the in-process maintenance', async () => {
  const ns = uniqueNs();
  const started: number[] = [];
  const worker = quietWorker(env.server.url, { maintenance: true }).register(ns, 'later', () => {
    started.push(Date.now());
  });
  await worker.start();
  try {
    const t0 = Date.now();
    const r = await env.client.enqueue(ns, 'later', {}, { delaySeconds: 1 });
    assert.equal(r.status, 'scheduled');
    await waitFor('ran', () => started.length === 1);
    assert.ok((started[0] as number) >= t0 + 990, `not early: ${(started[0] as number) - t0} ms`);
  } finally {
    await worker.stop();
  }
});

test('registration rules', async () => {
  const w = quietWorker(env.server.url);
  assert.throws(() => w.register('bad ns', 't', () => undefined), /namespace: must be a string matching/);
  assert.throws(() => w.register('ns', 't', () => undefined, { concurrency: 0 }), /concurrency: must be an integer/);
  assert.throws(() => w.register('ns', 't', () => undefined, { leaseMs: 10 }), /leaseMs: must be an integer 1000\.\.86400000/);
  w.register('ns', 't', () => undefined);
  assert.throws(() => w.register('ns', 't', () => undefined), (e: Error & { code?: string }) => e.code === 'already_exists');
  await assert.rejects(quietWorker(env.server.url).start(), /register at least one handler/);
});

test('fetches and acks in batches: far fewer calls than tasks', async () => {
  const ns = uniqueNs();
  const tasks = await env.client.enqueueMany(Array.from({ length: 300 }, (_, i) => ({ namespace: ns, taskType: 'b', payload: { i } })));
  const worker = quietWorker(env.server.url).register(ns, 'b', () => undefined, { concurrency: 50 });
  await worker.start();
  try {
    await waitFor('all acked', () => worker.stats().succeeded === 300);
    // The events stream has one entry per call and transition (docs/keyspace.md).
    const events = await env.server.redis().xrange(`baton:v2:{${ns}}:events`, '-', '+');
    const field = (e: [string, string[]], name: string) => e[1][e[1].indexOf(name) + 1];
    const acks = events.filter((e) => field(e, 'to') === 'done');
    const dequeues = events.filter((e) => field(e, 'to') === 'active');
    assert.equal(acks.reduce((n, e) => n + (field(e, 'ids') as string).split(' ').length, 0), 300);
    assert.ok(acks.length <= 60, `${acks.length} ack calls for 300 tasks`);
    assert.ok(dequeues.length <= 60, `${dequeues.length} dequeue calls for 300 tasks`);
    for (const t of tasks) assert.ok(await isDone(env.server.redis(), ns, t.taskId));
  } finally {
    await worker.stop();
  }
});

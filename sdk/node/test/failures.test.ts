// Failed attempts: retries with backoff to the dead-letter queue with the JavaScript stack,
// non-retryable errors, rejected promises, values that are not Errors, and execution_timeout
// through the handler's AbortSignal. (Rejections a handler forgot to await and exceptions from
// its timers are in isolation.test.ts: they need a process without the test runner's listeners.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { NonRetryableError, type FailedAttempt } from '../src/index.js';
import { waitFor } from './helpers/redis_server.js';
import { attemptErrors, isDead, quietWorker, serverAndClient, uniqueNs } from './helpers/baton.js';

const env = serverAndClient();

const fastRetry = { retry: { baseMs: 50, maxMs: 200 } };

function failingHandlerNamed() {
  throw new Error('card declined');
}

test('a thrown error retries with backoff, then dead-letters with every attempt and its JS stack', async () => {
  const ns = uniqueNs();
  const attempts: number[] = [];
  const failed: FailedAttempt[] = [];
  const worker = quietWorker(env.server.url, { maintenance: true }).register(ns, 'charge', (task) => {
    attempts.push(task.attempt);
    failingHandlerNamed();
  }, fastRetry);
  worker.on('failed', (f: FailedAttempt) => failed.push(f));
  await worker.start();
  try {
    const r = await env.client.enqueue(ns, 'charge', { amount: 5 }, { maxRetry: 2 });
    await waitFor('dead', () => isDead(env.server.redis(), ns, 'charge', r.taskId));
    assert.deepEqual(attempts, [1, 2, 3]);
    const errors = await attemptErrors(env.server.redis(), ns, r.taskId);
    assert.deepEqual(errors.map((e) => [e.attempt, e.kind]), [[1, 'error'], [2, 'error'], [3, 'error']]);
    for (const e of errors) {
      assert.equal(e.error, 'Error: card declined');
      assert.match(e.stack, /^Error: card declined\n\s+at failingHandlerNamed \(.*failures\.test\.js:\d+:\d+\)/);
      assert.equal(e.worker, worker.consumerName);
    }
    await waitFor('events and counters', () => failed.length === 3 && worker.stats().dead === 1);
    assert.deepEqual(failed.map((f) => f.verdict), ['retry', 'retry', 'dead']);
    assert.equal(worker.stats().failed, 3);
  } finally {
    await worker.stop();
  }
});

test('non-retryable errors, rejected promises, thrown non-Errors and causes', async () => {
  const ns = uniqueNs();
  const worker = quietWorker(env.server.url, { maintenance: true })
    .register(ns, 'nonretry', async () => {
      await delay(1);
      throw new NonRetryableError('bad input: no such customer');
    }, fastRetry)
    .register(ns, 'flagged', () => Promise.reject(Object.assign(new Error('from another realm'), { nonRetryable: true })), fastRetry)
    .register(ns, 'rejects', () => Promise.reject(new TypeError('boom', { cause: new Error('root cause') })), fastRetry)
    .register(ns, 'string', () => {
      throw 'just a string';
    }, fastRetry);
  await worker.start();
  try {
    const [a, b, c, d] = await Promise.all([
      env.client.enqueue(ns, 'nonretry', {}, { maxRetry: 5 }),
      env.client.enqueue(ns, 'flagged', {}, { maxRetry: 5 }),
      env.client.enqueue(ns, 'rejects', {}, { maxRetry: 1 }),
      env.client.enqueue(ns, 'string', {}, { maxRetry: 0 }),
    ]);
    const r = env.server.redis();
    await waitFor('all dead', async () => (await isDead(r, ns, 'nonretry', a.taskId)) && (await isDead(r, ns, 'flagged', b.taskId)) &&
      (await isDead(r, ns, 'rejects', c.taskId)) && (await isDead(r, ns, 'string', d.taskId)));
    const ea = await attemptErrors(r, ns, a.taskId);
    assert.deepEqual(ea.map((e) => e.kind), ['non_retryable'], 'straight to the DLQ');
    assert.equal(ea[0]?.error, 'NonRetryableError: bad input: no such customer');
    assert.deepEqual((await attemptErrors(r, ns, b.taskId)).map((e) => e.kind), ['non_retryable']);
    const ec = await attemptErrors(r, ns, c.taskId);
    assert.deepEqual(ec.map((e) => e.kind), ['error', 'error']);
    assert.equal(ec[0]?.error, 'TypeError: boom');
    assert.match(ec[0]?.stack ?? '', /caused by: Error: root cause/);
    const ed = await attemptErrors(r, ns, d.taskId);
    assert.equal(ed[0]?.error, "non-Error value thrown: 'just a string'");
    assert.match(ed[0]?.stack ?? '', /observed by the baton worker at/);
  } finally {
    await worker.stop();
  }
});

test('execution_timeout aborts the handler signal and fails the attempt as a timeout', async () => {
  const ns = uniqueNs();
  let abortReason: unknown;
  let ignoredFinished = false;
  const worker = quietWorker(env.server.url, { maintenance: true })
    .register(ns, 'cooperative', async (_task, { signal, deadline }) => {
      assert.ok(deadline !== undefined && deadline > Date.now());
      try {
        await delay(4000, undefined, { signal });
      } catch (e) {
        abortReason = signal.reason;
        throw e;
      }
    }, fastRetry)
    .register(ns, 'ignores', async () => {
      await delay(4000);
      ignoredFinished = true;
    }, fastRetry);
  await worker.start();
  try {
    const t0 = Date.now();
    const [c, i] = await Promise.all([
      env.client.enqueue(ns, 'cooperative', { sleep_ms: 4000 }, { executionTimeout: 1, maxRetry: 0 }),
      env.client.enqueue(ns, 'ignores', {}, { executionTimeout: 1, maxRetry: 0 }),
    ]);
    const r = env.server.redis();
    await waitFor('both dead', async () => (await isDead(r, ns, 'cooperative', c.taskId)) && (await isDead(r, ns, 'ignores', i.taskId)));
    const elapsed = Date.now() - t0;
    assert.ok(elapsed < 3500, `failed at the deadline, not when the handler gave up (${elapsed} ms)`);
    assert.equal(ignoredFinished, false);
    for (const id of [c.taskId, i.taskId]) {
      const e = await attemptErrors(r, ns, id);
      assert.deepEqual(e.map((x) => x.kind), ['timeout']);
      assert.equal(e[0]?.error, 'execution_timeout of 1s exceeded');
      assert.ok((e[0]?.stack ?? '').length > 0);
    }
    assert.ok(abortReason instanceof Error && abortReason.name === 'TimeoutError');
    assert.equal(worker.stats().timedOut, 2);
  } finally {
    await worker.stop({ graceMs: 0 });
  }
});

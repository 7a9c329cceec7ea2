// Leases: a task running longer than its lease is never taken back while its worker is alive
// and heartbeating (even with a reaper running beside it); a worker that learns its lease was
// taken (baton_v2_extend no longer returns the entry) aborts the attempt.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { type Task } from '../src/index.js';
import { waitFor } from './helpers/redis_server.js';
import { attemptErrors, isDone, quietWorker, serverAndClient, uniqueNs } from './helpers/baton.js';

const env = serverAndClient();

test('a task three leases long is not reclaimed while its worker heartbeats', async () => {
  const ns = uniqueNs();
  const runs: number[] = [];
  const worker = quietWorker(env.server.url).register(ns, 'long', async (task: Task) => {
    runs.push(task.attempt);
    await delay(4000);
  }, { leaseMs: 1200 });
  // A second worker with the maintenance loop: it reclaims every expired lease of the type.
  const reaper = quietWorker(env.server.url, { maintenance: true }).register(ns, 'long', () => {
    runs.push(-1);
  }, { leaseMs: 1200 });
  await worker.start();
  const r = await env.client.enqueue(ns, 'long', {});
  await waitFor('running', () => runs.length === 1);
  await reaper.start();
  try {
    await waitFor('done', () => isDone(env.server.redis(), ns, r.taskId), 20000);
    assert.deepEqual(runs, [1], 'ran once, by the first worker');
    assert.deepEqual(await attemptErrors(env.server.redis(), ns, r.taskId), []);
    assert.equal(worker.stats().leaseLost, 0);
  } finally {
    await Promise.all([worker.stop(), reaper.stop()]);
  }
});

test('a lost lease aborts the attempt', async () => {
  const ns = uniqueNs();
  let reason: unknown;
  const worker = quietWorker(env.server.url).register(ns, 'lost', async (_task, { signal }) => {
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
    reason = signal.reason;
  }, { leaseMs: 1000 });
  await worker.start();
  try {
    const r = await env.client.enqueue(ns, 'lost', {});
    const stream = `baton:v2:{${ns}}:stream:lost`;
    const redis = env.server.redis();
    const pending = await waitFor('delivered', async () => {
      const p = (await redis.xpending(stream, 'baton', '-', '+', 10)) as [string, string, number, number][];
      return p.length === 1 ? p : undefined;
    });
    // Another consumer takes the entry over (what a reclaim and a redelivery amount to).
    await redis.xclaim(stream, 'baton', 'someone-else', 0, pending[0]?.[0] as string);
    await waitFor('aborted', () => reason !== undefined, 10000);
    assert.match(String((reason as Error).message), /lease lost/);
    await waitFor('counted', () => worker.stats().leaseLost === 1);
    assert.ok(r.taskId);
  } finally {
    await worker.stop({ graceMs: 0 });
  }
});

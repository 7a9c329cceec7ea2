// Worker edges: handlers that ignore their AbortSignal keep their concurrency slot; the idle wait
// (XREAD) reads one entry at most; an ack refused by Redis (OOM) is sent again; a stop() whose
// grace runs out leaves the running task to its lease.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sleep, waitFor } from './helpers/redis_server.js';
import { attemptErrors, isDead, isDone, quietWorker, serverAndClient, uniqueNs } from './helpers/baton.js';

const env = serverAndClient();

test('a handler that ignores its AbortSignal keeps its slot: concurrency caps the handlers really running', async () => {
  const ns = uniqueNs();
  let running = 0;
  let peak = 0;
  const starts: number[] = [];
  const worker = quietWorker(env.server.url).register(ns, 'stuck', async () => {
    starts.push(Date.now());
    peak = Math.max(peak, ++running);
    try {
      await sleep(2500); // never looks at the signal
    } finally {
      running--;
    }
  }, { concurrency: 1 });
  const tasks = await env.client.enqueueMany([1, 2].map((i) => ({ namespace: ns, taskType: 'stuck', payload: { i }, options: { executionTimeout: 1, maxRetry: 0 } })));
  await worker.start();
  try {
    await waitFor('the first attempt timed out', () => worker.stats().timedOut === 1);
    await sleep(300);
    assert.equal(worker.stats().types[0]?.zombies, 1, 'counted as still running');
    assert.equal(starts.length, 1, 'the next task waits for the slot');
    const r = env.server.redis();
    await waitFor('both dead by timeout', async () => (await isDead(r, ns, 'stuck', tasks[0]!.taskId)) && (await isDead(r, ns, 'stuck', tasks[1]!.taskId)), 15000);
    for (const t of tasks) assert.equal((await attemptErrors(r, ns, t.taskId))[0]?.kind, 'timeout');
    assert.equal(peak, 1);
    assert.ok((starts[1] as number) - (starts[0] as number) >= 2400, `second started after the first returned (${(starts[1] as number) - (starts[0] as number)} ms)`);
    await waitFor('no zombie left', () => worker.stats().types[0]?.zombies === 0, 5000);
  } finally {
    await worker.stop();
  }
});

test('the idle wait asks XREAD for one entry, not every new payload', async () => {
  const ns = uniqueNs();
  const monitor = await env.server.redis().monitor();
  const xreads: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (String(args[0]).toUpperCase() === 'XREAD') xreads.push(args.map(String));
  });
  const worker = quietWorker(env.server.url, { blockMs: 100 }).register(ns, 'idle', () => undefined);
  await worker.start();
  try {
    await waitFor('the worker waits in XREAD', () => xreads.some((a) => a.includes(`baton:v2:{${ns}}:stream:idle`)));
  } finally {
    await worker.stop();
    monitor.disconnect();
  }
  for (const a of xreads.filter((x) => x.includes(`baton:v2:{${ns}}:stream:idle`))) {
    const at = a.findIndex((x) => x.toUpperCase() === 'COUNT');
    assert.ok(at > 0 && a[at + 1] === '1', `XREAD with COUNT 1: ${a.join(' ')}`);
  }
});

test('an ack Redis refuses with OOM is sent again once it can write: the task is not run twice', async () => {
  const ns = uniqueNs();
  const r = env.server.redis();
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let runs = 0;
  const warnings: string[] = [];
  const worker = quietWorker(env.server.url).register(ns, 'oom', async () => {
    runs++;
    await gate;
  }, { leaseMs: 60000 });
  worker.on('warning', (m: string) => warnings.push(m));
  const task = await env.client.enqueue(ns, 'oom', {});
  await worker.start();
  try {
    await waitFor('running', () => runs === 1);
    await r.config('SET', 'maxmemory', '1');
    try {
      release();
      await waitFor('the ack refused', () => warnings.some((w) => /OOM/.test(w)));
      await sleep(300);
      assert.equal(await isDone(r, ns, task.taskId), false);
    } finally {
      await r.config('SET', 'maxmemory', '0');
    }
    await waitFor('acked after the OOM', () => isDone(r, ns, task.taskId), 10000);
    assert.equal(runs, 1);
    await waitFor('counted', () => worker.stats().succeeded === 1);
  } finally {
    await worker.stop();
  }
});

test('stop(): when the grace runs out, the running attempt is aborted and left to its lease', async () => {
  const ns = uniqueNs();
  let reason: unknown;
  let started = false;
  const worker = quietWorker(env.server.url).register(ns, 'long', async (_task, { signal }) => {
    started = true;
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => {
      reason = signal.reason;
      resolve();
    }));
    await sleep(50);
  }, { leaseMs: 60000 });
  const task = await env.client.enqueue(ns, 'long', {});
  await worker.start();
  await waitFor('running', () => started);
  const t0 = Date.now();
  await worker.stop({ graceMs: 300 });
  const took = Date.now() - t0;
  assert.ok(took >= 300 && took < 3000, `stop took ${took} ms`);
  assert.match(String((reason as Error)?.message), /worker shutting down: attempt abandoned to its lease/);
  const r = env.server.redis();
  assert.equal(await isDone(r, ns, task.taskId), false, 'not acked');
  assert.deepEqual(await attemptErrors(r, ns, task.taskId), [], 'no failure recorded: the lease brings it back');
  const pending = (await r.xpending(`baton:v2:{${ns}}:stream:long`, 'baton')) as [number];
  assert.equal(Number(pending[0]), 1, 'still leased, so it comes back when the lease ends');
  assert.equal(worker.stats().succeeded, 0);
});

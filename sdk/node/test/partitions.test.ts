// Partitions (docs/cluster.md, "Partitions") on a real redis-server: the partition rule against
// every vector of contract/fixtures/partitions.json, a namespace of 4 partitions (tasks spread by
// id, each run once, handlers see the namespace, duplicates met across a cache refresh), cancel
// and configure over partitions, a worker that starts serving partitions added while it runs,
// and a threaded type whose partitions share its threads; the stored count read as the fixture's
// "counts" say; configure and cancel reaching partitions added a moment ago; stop() racing a new
// partition. The count is set by hand (HSET).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatonError, Client, type TaskRequest } from '../src/index.js';
import { fnv1a32, parsePartitionCount, partitionOf, storageNamespace } from '../src/partitions.js';
import { PARTITIONS } from '../src/generated/protocol.js';
import { TypeRunner } from '../src/type_runner.js';
import { sleep, waitFor } from './helpers/redis_server.js';
import { isDone, quietWorker, record, serverAndClient, uniqueNs } from './helpers/baton.js';
import { REPO_ROOT } from './helpers/paths.js';

const env = serverAndClient();

interface PartitionCase { task_id: string; fnv1a32: number; partition: Record<string, number> }

test('the partition rule gives every vector of contract/fixtures/partitions.json', () => {
  const file = JSON.parse(readFileSync(join(REPO_ROOT, PARTITIONS.fixtures), 'utf8')) as { cases: PartitionCase[] };
  assert.ok(file.cases.length >= 5, 'the fixture has cases');
  let checked = 0;
  for (const c of file.cases) {
    assert.equal(fnv1a32(c.task_id), c.fnv1a32, `fnv1a32(${c.task_id})`);
    for (const [count, partition] of Object.entries(c.partition)) {
      assert.equal(partitionOf(c.task_id, Number(count)), partition, `partition of ${c.task_id} among ${count}`);
      checked++;
    }
  }
  console.log(`# ${file.cases.length} ids, ${checked} (id, count) vectors`);
  assert.equal(storageNamespace('shop', 0), 'shop');
  assert.equal(storageNamespace('shop', 3), 'shop:3');
  assert.deepEqual(parsePartitionCount(null), { count: 1 });
  assert.deepEqual(parsePartitionCount('4'), { count: 4 });
  assert.deepEqual(parsePartitionCount('1024'), { count: 1024 });
  assert.deepEqual(parsePartitionCount('5000'), { count: 1024 });
  for (const bad of ['0', '-2', 'four', '', ' 3', '2.5']) assert.deepEqual(parsePartitionCount(bad), { count: 1, bad }, bad);
});

test('a stored count is read as every entry of "counts" in contract/fixtures/partitions.json says', () => {
  const file = JSON.parse(readFileSync(join(REPO_ROOT, PARTITIONS.fixtures), 'utf8')) as { counts: { stored: string | null; count: number }[] };
  assert.ok(file.counts.length >= 10, 'the fixture has counts');
  for (const c of file.counts) {
    const parsed = parsePartitionCount(c.stored);
    assert.equal(parsed.count, c.count, `count of ${JSON.stringify(c.stored)}`);
    // Warned about: any text other than ASCII digits worth at least 1 (absent is not a mistake).
    const valid = c.stored === null || (/^[0-9]+$/.test(c.stored) && /[1-9]/.test(c.stored));
    assert.equal(parsed.bad, valid ? undefined : c.stored, `bad of ${JSON.stringify(c.stored)}`);
  }
  console.log(`# ${file.counts.length} stored counts`);
});

/** Which storage namespace of `ns` (count partitions) holds the task record of `id` (null: none). */
async function holder(ns: string, count: number, id: string): Promise<string | null> {
  for (let p = 0; p < count; p++) if ((await record(env.server.redis(), storageNamespace(ns, p), id)) !== null) return storageNamespace(ns, p);
  return null;
}

/** Counts the reads of baton:v2:partitions that reach Redis (MONITOR). */
async function countCountReads(): Promise<{ reads: () => number; stop: () => void }> {
  const monitor = await env.server.redis().monitor();
  let n = 0;
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (args[1] === PARTITIONS.key) n++;
  });
  return { reads: () => n, stop: () => monitor.disconnect() };
}

test('4 partitions: 200 tasks (one by one and in batches) spread by id, each run once, handlers see the namespace', async () => {
  const ns = uniqueNs('p');
  const redis = env.server.redis();
  await redis.hset(PARTITIONS.key, ns, '4');
  const client = await Client.connect({ redis: env.server.url });
  const runs = new Map<string, number>();
  const seen = new Set<string>();
  const worker = quietWorker(env.server.url).register(ns, 'job', (task) => {
    runs.set(task.taskId, (runs.get(task.taskId) ?? 0) + 1);
    seen.add(task.namespace);
  }, { concurrency: 4 });
  try {
    const started = Date.now();
    const monitor = await countCountReads();
    // 10 at once on first use (they share one read of the count), then 90 one after the other.
    const firstTen = await Promise.all([client.enqueue(ns, 'job', { dup: true }, { taskId: 'order-42' }),
      ...Array.from({ length: 9 }, (_, i) => client.enqueue(ns, 'job', { c: i }))]);
    assert.deepEqual(firstTen.map((r) => r.status), firstTen.map(() => 'queued'));
    const ids: string[] = firstTen.map((r) => r.taskId);
    for (let i = 0; i < 90; i++) ids.push((await client.enqueue(ns, 'job', { i })).taskId);
    const batch: TaskRequest[] = Array.from({ length: 100 }, (_, i) => ({ namespace: ns, taskType: 'job', payload: { b: i } }));
    for (const part of [batch.slice(0, 60), batch.slice(60)]) {
      const results = await client.enqueueMany(part);
      assert.deepEqual(results.map((r) => r.status), part.map(() => 'queued'));
      ids.push(...results.map((r) => r.taskId));
    }
    assert.equal(monitor.reads(), 1, 'the count was read once, not per enqueue');
    // Each task is in the partition its id says, and every partition has some.
    const perPartition = [0, 0, 0, 0];
    for (const id of ids) {
      const p = partitionOf(id, 4);
      assert.equal(await holder(ns, 4, id), storageNamespace(ns, p), `task ${id}`);
      perPartition[p] = (perPartition[p] ?? 0) + 1;
    }
    const streamed = await Promise.all([0, 1, 2, 3].map((p) => redis.xlen(`baton:v2:{${storageNamespace(ns, p)}}:stream:job`)));
    assert.deepEqual(streamed, perPartition, 'stream lengths per partition');
    assert.ok(perPartition.every((n) => n > 0), `every partition has tasks: ${perPartition.join(',')}`);
    assert.equal((await client.enqueue(ns, 'job', {}, { taskId: 'order-42' })).status, 'duplicate');

    await worker.start();
    await waitFor('all 200 tasks done', async () => {
      for (const id of ids) if (!(await isDone(redis, storageNamespace(ns, partitionOf(id, 4)), id))) return false;
      return true;
    });
    assert.equal(runs.size, 200);
    assert.ok([...runs.values()].every((n) => n === 1), 'each task ran exactly once');
    assert.deepEqual([...seen], [ns], 'handlers see the namespace, never a partition');
    assert.deepEqual(await redis.smembers('baton:v2:namespaces').then((m) => m.filter((x) => x.startsWith(ns))), [ns]);
    console.log(`# 4 partitions: ${perPartition.join('/')} tasks, all done in ${Date.now() - started} ms`);

    // Past the 5 s cache: the count is read again, and the same id is still a duplicate.
    await worker.stop(); // (it reads the counts every 5 s too)
    await sleep(Math.max(0, started + 5100 - Date.now()));
    const readsBefore = monitor.reads();
    const again = await client.enqueue(ns, 'job', {}, { taskId: 'order-42' });
    assert.equal(again.status, 'duplicate');
    await waitFor('the read seen by MONITOR', () => monitor.reads() === readsBefore + 1, 1000);
    monitor.stop();
    assert.equal(runs.get('order-42'), 1);
  } finally {
    await worker.stop();
    await client.close();
  }
});

test('cancel looks in the id\'s partition, then the others; configure writes every partition', async () => {
  const ns = uniqueNs('p');
  const redis = env.server.redis();
  // "old" was enqueued while the namespace had one partition; at 4 its id points elsewhere.
  const oldId = ['old-1', 'old-2', 'old-3', 'old-4'].find((id) => partitionOf(id, 4) !== 0) as string;
  const before = await Client.connect({ redis: env.server.url });
  assert.equal((await before.enqueue(ns, 'job', {}, { taskId: oldId, delaySeconds: 600 })).status, 'scheduled');
  await before.close();
  await redis.hset(PARTITIONS.key, ns, '4');
  const client = await Client.connect({ redis: env.server.url });
  try {
    const fresh = await client.enqueue(ns, 'job', {}, { delaySeconds: 600 });
    assert.equal(await holder(ns, 4, fresh.taskId), storageNamespace(ns, partitionOf(fresh.taskId, 4)));
    await client.cancel(ns, fresh.taskId);
    assert.notEqual(await redis.zscore(`baton:v2:{${ns}}:scheduled:job`, oldId), null);
    await client.cancel(ns, oldId);
    assert.equal(await redis.zscore(`baton:v2:{${ns}}:scheduled:job`, oldId), null, 'cancelled in partition 0');
    assert.notEqual(await redis.hget(`baton:v2:{${ns}}:ended`, oldId), null);
    await assert.rejects(client.cancel(ns, 'nowhere-1'), (e: BatonError) => e.code === 'not_found' && /no live task nowhere-1 in namespace /.test(e.message));

    const settings = await client.configure(ns, { lease_ms: 5000 });
    assert.equal(settings.lease_ms, 5000);
    for (let p = 0; p < 4; p++) assert.equal(await redis.hget(`baton:v2:{${storageNamespace(ns, p)}}:config`, 'lease_ms'), '5000', `partition ${p}`);
    assert.equal((await client.configure(ns)).lease_ms, 5000);
  } finally {
    await client.close();
  }
});

test('configure and cancel read a count grown a moment ago, not the producer\'s 5 s copy', async () => {
  const ns = uniqueNs('p');
  const redis = env.server.redis();
  const stale = await Client.connect({ redis: env.server.url });
  try {
    await stale.enqueue(ns, 'job', {}, { delaySeconds: 600 }); // caches P = 1 for 5 s
    await redis.hset(PARTITIONS.key, ns, '4');

    assert.equal((await stale.configure(ns, { lease_ms: 6000 })).lease_ms, 6000);
    for (let p = 0; p < 4; p++) assert.equal(await redis.hget(`baton:v2:{${storageNamespace(ns, p)}}:config`, 'lease_ms'), '6000', `partition ${p}`);

    let id = '';
    for (let i = 0; id === ''; i++) if (partitionOf(`grown-${i}`, 4) === 3) id = `grown-${i}`;
    assert.equal((await env.client.enqueue(ns, 'job', {}, { taskId: id, delaySeconds: 3600 })).status, 'scheduled');
    const scheduled = `baton:v2:{${ns}:3}:scheduled:job`;
    assert.notEqual(await redis.zscore(scheduled, id), null, 'in partition 3');
    await stale.cancel(ns, id);
    assert.equal(await redis.zscore(scheduled, id), null, 'cancelled in partition 3');
    assert.notEqual(await redis.hget(`baton:v2:{${ns}:3}:ended`, id), null);
  } finally {
    await stale.close();
  }
});

test('an unparsable count is 1 (a warning, no crash); a count above 1024 is 1024', async () => {
  const ns = uniqueNs('p');
  const redis = env.server.redis();
  await redis.hset(PARTITIONS.key, ns, 'many');
  const warnings: string[] = [];
  const client = await Client.connect({ redis: env.server.url, logger: { warn: (m) => warnings.push(m), error: () => undefined } });
  try {
    const r = await client.enqueue(ns, 'job', {}, { taskId: 'a' });
    assert.equal(await holder(ns, 1, r.taskId), ns);
    assert.deepEqual(warnings, [`baton:v2:partitions ${ns}: 'many' is not a partition count (an integer 1..1024); using 1`]);
    // Read again (configure reads now): the same value is not logged again; another one is.
    await client.configure(ns, { lease_ms: 5000 });
    assert.equal(warnings.length, 1, 'logged once per value, not on every read');
    await redis.hset(PARTITIONS.key, ns, '0x10');
    await client.configure(ns, { lease_ms: 5000 });
    assert.deepEqual(warnings.slice(1), [`baton:v2:partitions ${ns}: '0x10' is not a partition count (an integer 1..1024); using 1`]);
    const big = uniqueNs('p');
    await redis.hset(PARTITIONS.key, big, '100000');
    await client.enqueue(big, 'job', {}, { taskId: 'a' }); // fixture: partition 300 of 1024
    assert.notEqual(await record(redis, `${big}:300`, 'a'), null);
  } finally {
    await client.close();
  }
});

test('a running worker serves partitions added while it runs (P 1 -> 3) within ~6 s', async () => {
  const ns = uniqueNs('g');
  const redis = env.server.redis();
  const runs = new Map<string, string>();
  const worker = quietWorker(env.server.url, { maintenance: true }).register(ns, 'job', (task) => {
    runs.set(task.taskId, task.namespace);
  }, { concurrency: 2 });
  await worker.start();
  const producer = await Client.connect({ redis: env.server.url });
  try {
    const firstReadAt = Date.now();
    const first = await producer.enqueueMany(Array.from({ length: 10 }, (_, i) => ({ namespace: ns, taskType: 'job', payload: { i } })));
    await waitFor('the first 10 done (one partition)', () => first.every((r) => runs.has(r.taskId)));
    await redis.hset(PARTITIONS.key, ns, '3');
    const grownAt = Date.now();
    // A producer that reads the count now puts tasks in all three partitions.
    const after = await Client.connect({ redis: env.server.url });
    const ids = Array.from({ length: 30 }, (_, i) => `grow-${i}`);
    const results = await after.enqueueMany(ids.map((id) => ({ namespace: ns, taskType: 'job', payload: {}, options: { taskId: id } })));
    await after.close();
    assert.deepEqual(results.map((r) => r.status), ids.map(() => 'queued'));
    assert.deepEqual(new Set(ids.map((id) => partitionOf(id, 3))), new Set([0, 1, 2]), 'the ids cover the three partitions');
    await waitFor('every task of the three partitions done', async () => {
      for (const id of ids) if (!(await isDone(redis, storageNamespace(ns, partitionOf(id, 3)), id))) return false;
      return true;
    }, 8000);
    const took = Date.now() - grownAt;
    console.log(`# grown to 3 partitions: served ${took} ms after the HSET`);
    assert.ok(took < 7000, `served within ~6 s (${took} ms)`);
    assert.ok(ids.every((id) => runs.get(id) === ns), 'handlers see the namespace');
    // The first producer's cached count (1) expires 5 s after it read it: then it uses the new
    // partitions too. Delayed: the worker's own maintenance promotes it in the new partition.
    const late = ['late-1', 'late-2', 'late-3'].find((id) => partitionOf(id, 3) !== 0) as string;
    await sleep(Math.max(0, firstReadAt + 5100 - Date.now()));
    assert.equal((await producer.enqueue(ns, 'job', {}, { taskId: late, delaySeconds: 1 })).status, 'scheduled');
    await waitFor(`${late} done in its partition`, () => isDone(redis, storageNamespace(ns, partitionOf(late, 3)), late));
    assert.equal(runs.get(late), ns);
  } finally {
    await worker.stop();
    await producer.close();
  }
});

// stop() arriving while a new partition's runner connects, after its fetch loop leased a task:
// that runner is heartbeaten, given the grace and abandoned like the others. The interleaving is
// made certain by wrapping TypeRunner.start (Redis, the worker and its timer are all real).
test('stop() while a new partition is being served: its task is heartbeaten, stop() ends within the grace', async () => {
  const ns = uniqueNs('s');
  const redis = env.server.redis();
  const leaseMs = 1500;
  const graceMs = 2500;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const seen: { signal?: AbortSignal; stopping?: Promise<void>; leaseError?: Error } = {};
  // Ignores its signal: only abandon() lets stop() end.
  const worker = quietWorker(env.server.url, { shutdownGraceMs: graceMs }).register(ns, 'job', async (_task, { signal }) => {
    seen.signal = signal;
    await released;
  }, { leaseMs });
  const originalStart = TypeRunner.prototype.start;
  TypeRunner.prototype.start = async function (this: TypeRunner): Promise<void> {
    if (this.settings.storageNs !== `${ns}:1`) return originalStart.call(this);
    seen.stopping = worker.stop();
    await originalStart.call(this);
    // Its first fetch pass leases the task before start() returns to the worker.
    await waitFor('the task leased by the new runner', () => this.runningCount === 1, 5000).catch((e: Error) => {
      seen.leaseError = e;
    });
  };
  try {
    await worker.start();
    await redis.hset(PARTITIONS.key, ns, '2');
    const id = ['st-1', 'st-2', 'st-3', 'st-4'].find((x) => partitionOf(x, 2) === 1) as string;
    assert.equal((await env.client.enqueue(ns, 'job', {}, { taskId: id })).status, 'queued');
    await waitFor('the worker\'s partition round (every 5 s) calling stop()', () => seen.stopping !== undefined, 8000);
    const stopAt = Date.now();
    const ended = await Promise.race([(seen.stopping as Promise<void>).then(() => true), sleep(graceMs + 3000).then(() => false)]);
    const took = Date.now() - stopAt;
    assert.equal(seen.leaseError, undefined, 'the new runner leased the task');
    assert.ok(ended, `stop() ended (it has not after ${took} ms)`);
    assert.ok(took < graceMs + 2000, `within the grace (${took} ms)`);
    assert.equal(seen.signal?.aborted, true, 'the attempt was abandoned to its lease');
    // Leased for the whole grace (longer than the lease): heartbeats kept it fresh.
    const pending = (await redis.xpending(`baton:v2:{${ns}:1}:stream:job`, 'baton', '-', '+', 10)) as [string, string, number, number][];
    assert.equal(pending.length, 1);
    const [, consumer, idleMs, deliveries] = pending[0] as [string, string, number, number];
    assert.equal(consumer, worker.consumerName);
    assert.equal(deliveries, 1);
    assert.ok(idleMs < leaseMs, `lease renewed during the grace (idle ${idleMs} ms, lease ${leaseMs} ms)`);
  } finally {
    TypeRunner.prototype.start = originalStart;
    release();
    await worker.stop();
  }
});

test('a threaded type in 3 partitions runs no more attempts at once than it has threads', async () => {
  const ns = uniqueNs('t');
  const dir = mkdtempSync(join(tmpdir(), 'baton-part-'));
  const handler = join(dir, 'spin.mjs');
  writeFileSync(handler, 'export default function spin() { const until = Date.now() + 80; while (Date.now() < until); }\n');
  await env.server.redis().hset(PARTITIONS.key, ns, '3');
  const worker = quietWorker(env.server.url).registerThreaded(ns, 'cpu', handler, { threads: 2 });
  await worker.start();
  let peak = 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, worker.stats().types[0]?.running ?? 0);
  }, 5);
  try {
    const results = await env.client.enqueueMany(Array.from({ length: 18 }, (_, i) => ({ namespace: ns, taskType: 'cpu', payload: { i } })));
    assert.equal(new Set(results.map((r) => partitionOf(r.taskId, 3))).size, 3, 'tasks in every partition');
    await waitFor('18 threaded tasks done', async () => {
      for (const r of results) if (!(await isDone(env.server.redis(), storageNamespace(ns, partitionOf(r.taskId, 3)), r.taskId))) return false;
      return true;
    });
    assert.ok(peak >= 1 && peak <= 2, `at most 2 attempts at once (peak ${peak})`);
  } finally {
    clearInterval(sampler);
    await worker.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('heartbeats go to the partition\'s keys: a task running past its lease in partition 1 keeps it', async () => {
  const ns = uniqueNs('h');
  await env.server.redis().hset(PARTITIONS.key, ns, '2');
  const id = ['hb-1', 'hb-2', 'hb-3', 'hb-4'].find((x) => partitionOf(x, 2) === 1) as string;
  const attempts: number[] = [];
  const worker = quietWorker(env.server.url, { maintenance: true }).register(ns, 'slow', async (task, { signal }) => {
    attempts.push(task.attempt);
    await sleep(2500);
    signal.throwIfAborted();
  }, { leaseMs: 1000 });
  await worker.start();
  try {
    await env.client.enqueue(ns, 'slow', {}, { taskId: id });
    await waitFor('the task done in partition 1', () => isDone(env.server.redis(), storageNamespace(ns, 1), id), 8000);
    assert.deepEqual(attempts, [1], 'one attempt, never taken back');
    assert.equal(worker.stats().leaseLost, 0);
  } finally {
    await worker.stop();
  }
});

// Node.js SDK throughput, Baton and BullMQ side by side: a producer (its own worker_thread, event
// loop and connection) adds N tasks in batches of 100 (Client.enqueueMany / Queue.addBulk) while
// one worker in the main thread drains them with a no-op handler at the same concurrency. Both
// at once, as in production. Reported per system:
//   enqueue rate = N / (time the producer took), drain rate = N / (last task completed - start),
//   redis cpu = used_cpu_user + used_cpu_sys delta of the phase / N.
// A completed task is one Redis recorded as done (Baton: acks counted by Worker.stats; BullMQ:
// the "completed" event, jobs added with removeOnComplete). Runs one system per process, on a
// flushed database; run.sh starts a fresh redis-server for each.
//
//   node bench.mjs --system baton|bullmq --redis URL [--tasks 100000] [--payload 200] [--concurrency 50]
import { Worker as Thread, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { Redis } from 'ioredis';

const BATCH = 100;
const NS = 'bench';
const TYPE = 'noop';

function parseArgs(argv) {
  const o = { system: 'baton', url: 'redis://127.0.0.1:6379', tasks: 100000, payload: 200, concurrency: 50 };
  for (let i = 0; i < argv.length; i += 2) {
    const v = argv[i + 1];
    if (v === undefined) throw new Error(`missing value for ${argv[i]}`);
    if (argv[i] === '--system') o.system = v;
    else if (argv[i] === '--redis') o.url = v;
    else if (argv[i] === '--tasks') o.tasks = Number(v);
    else if (argv[i] === '--payload') o.payload = Number(v);
    else if (argv[i] === '--concurrency') o.concurrency = Number(v);
    else throw new Error(`unknown option ${argv[i]}`);
  }
  if (!['baton', 'bullmq'].includes(o.system) || !(o.tasks > 0 && o.payload >= 11 && o.concurrency > 0)) throw new Error('bad option value');
  return o;
}

/** {"data":"xxx..."}: exactly `bytes` bytes once JSON-encoded (as bench/bullmq and bench_throughput). */
const payloadObject = (bytes) => ({ data: 'x'.repeat(bytes - 11) });

function bullConnection(url) {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port || 6379), maxRetriesPerRequest: null };
}

async function produce({ system, url, tasks, payload }) {
  const data = payloadObject(payload);
  const t0 = process.hrtime.bigint();
  if (system === 'baton') {
    const { Client } = await import('@baton/client');
    const client = await Client.connect({ redis: url });
    const batch = Array.from({ length: BATCH }, () => ({ namespace: NS, taskType: TYPE, payload: data }));
    for (let sent = 0; sent < tasks; sent += BATCH) {
      await client.enqueueMany(sent + BATCH <= tasks ? batch : batch.slice(0, tasks - sent));
    }
    await client.close();
  } else {
    const { Queue } = await import('bullmq');
    const queue = new Queue(NS, { connection: bullConnection(url) });
    const jobs = Array.from({ length: BATCH }, () => ({ name: TYPE, data, opts: { removeOnComplete: true } }));
    for (let sent = 0; sent < tasks; sent += BATCH) {
      await queue.addBulk(sent + BATCH <= tasks ? jobs : jobs.slice(0, tasks - sent));
    }
    await queue.close();
  }
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

/** Starts the consumer; resolves to a promise of the time (hrtime) the N-th task completed. */
async function startConsumer({ system, url, tasks, concurrency }) {
  let finish;
  const drained = new Promise((resolve) => (finish = resolve));
  if (system === 'baton') {
    const { Worker, silentLogger } = await import('@baton/client');
    const worker = new Worker({ redis: url, logger: silentLogger, defaultConcurrency: concurrency });
    worker.register(NS, TYPE, () => undefined);
    await worker.start();
    const poll = setInterval(() => {
      if (worker.stats().succeeded >= tasks) {
        clearInterval(poll);
        finish(process.hrtime.bigint());
      }
    }, 2);
    return { drained, close: () => worker.stop() };
  }
  const { Worker } = await import('bullmq');
  let completed = 0;
  const worker = new Worker(NS, async () => {}, { connection: bullConnection(url), concurrency });
  worker.on('completed', () => {
    if (++completed === tasks) finish(process.hrtime.bigint());
  });
  worker.on('failed', (job, err) => {
    console.error(`bullmq: job ${job?.id} failed: ${err}`);
    process.exit(1);
  });
  await worker.waitUntilReady();
  return { drained, close: () => worker.close() };
}

async function redisCpuSeconds(admin) {
  const info = await admin.info('cpu');
  const field = (name) => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)[1]);
  return field('used_cpu_user') + field('used_cpu_sys');
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const admin = new Redis(o.url);
  await admin.flushall();
  const consumer = await startConsumer(o);
  const cpu0 = await redisCpuSeconds(admin);
  const start = process.hrtime.bigint();
  const producer = new Thread(new URL(import.meta.url), { workerData: o });
  const produced = new Promise((resolve, reject) => {
    producer.on('message', resolve);
    producer.on('error', reject);
    producer.on('exit', (code) => code !== 0 && reject(new Error(`producer exited ${code}`)));
  });
  const enqueueSeconds = await produced;
  const end = await consumer.drained;
  const cpu1 = await redisCpuSeconds(admin);
  await consumer.close();
  await admin.quit();
  const seconds = Number(end - start) / 1e9;
  const require = createRequire(import.meta.url);
  const version = o.system === 'baton' ? require('@baton/client/package.json').version : require('bullmq/package.json').version;
  console.log(`${o.system} ${version}: tasks=${o.tasks} payload=${o.payload}B concurrency=${o.concurrency} (${seconds.toFixed(2)} s)`);
  console.log(`${o.system.padEnd(7)} enqueue: ${(o.tasks / enqueueSeconds).toFixed(0).padStart(8)} tasks/s  ` +
    `drain: ${(o.tasks / seconds).toFixed(0).padStart(8)} tasks/s  redis cpu ${(((cpu1 - cpu0) * 1e6) / o.tasks).toFixed(2)} us/task`);
}

if (isMainThread) {
  main().catch((e) => {
    console.error(`bench: ${e?.stack ?? e}`);
    process.exit(1);
  });
} else {
  produce(workerData).then((s) => parentPort.postMessage(s), (e) => {
    console.error(`producer: ${e?.stack ?? e}`);
    process.exit(1);
  });
}

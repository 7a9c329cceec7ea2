// BullMQ drain, the counterpart of the "baton" phase of bench_throughput: a producer (its own
// thread and connection) adds N jobs with addBulk in batches of 100 while one Worker with a
// no-op processor and concurrency 50 drains them; the rate is N / (last job completed - first
// add). Redis CPU per task is the used_cpu_user+used_cpu_sys delta of the phase / N.
//
//   node bench.js --redis redis://127.0.0.1:PORT [--tasks 200000] [--payload 200]
//                 [--concurrency 50]
//
// Jobs are added with removeOnComplete (BullMQ's usual setting for throughput: a completed job
// leaves nothing behind), on a flushed database. Starts nothing itself: bench/run_throughput.sh
// starts the redis-server.
'use strict';

const { Worker: Thread, isMainThread, parentPort, workerData } = require('node:worker_threads');
const { Queue, Worker } = require('bullmq');
const IORedis = require('ioredis');

const QUEUE = 'bench';
const BATCH = 100;

function connectionOptions(url) {
  const u = new URL(url);
  // A Worker's connection must not give up on a blocked command (BullMQ requires null here).
  return { host: u.hostname, port: Number(u.port || 6379), maxRetriesPerRequest: null };
}

function payloadObject(bytes) {
  // {"data":"xxx..."}: exactly `bytes` bytes once JSON-encoded, as bench_throughput's payload.
  return { data: 'x'.repeat(Math.max(0, bytes - 11)) };
}

async function produce({ url, tasks, payload }) {
  const queue = new Queue(QUEUE, { connection: connectionOptions(url) });
  const data = payloadObject(payload);
  const jobs = [];
  for (let i = 0; i < BATCH; ++i) jobs.push({ name: 'noop', data, opts: { removeOnComplete: true } });
  for (let sent = 0; sent < tasks; sent += BATCH) {
    await queue.addBulk(sent + BATCH <= tasks ? jobs : jobs.slice(0, tasks - sent));
  }
  await queue.close();
}

function parseArgs(argv) {
  const o = { url: 'redis://127.0.0.1:6379', tasks: 200000, payload: 200, concurrency: 50 };
  for (let i = 0; i < argv.length; i += 2) {
    const v = argv[i + 1];
    if (v === undefined) throw new Error(`missing value for ${argv[i]}`);
    if (argv[i] === '--redis') o.url = v;
    else if (argv[i] === '--tasks') o.tasks = Number(v);
    else if (argv[i] === '--payload') o.payload = Number(v);
    else if (argv[i] === '--concurrency') o.concurrency = Number(v);
    else throw new Error(`unknown option ${argv[i]}`);
  }
  if (!(o.tasks > 0 && o.payload >= 11 && o.concurrency > 0)) throw new Error('bad option value');
  return o;
}

async function redisCpuSeconds(admin) {
  const info = await admin.info('cpu');
  const field = (name) => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)[1]);
  return field('used_cpu_user') + field('used_cpu_sys');
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const admin = new IORedis(o.url);
  await admin.flushall();

  let completed = 0;
  let finish;
  const drained = new Promise((resolve) => { finish = resolve; });
  const worker = new Worker(QUEUE, async () => {}, {
    connection: connectionOptions(o.url),
    concurrency: o.concurrency,
  });
  worker.on('completed', () => {
    if (++completed === o.tasks) finish(process.hrtime.bigint());
  });
  worker.on('failed', (job, err) => {
    console.error(`bullmq: job ${job && job.id} failed: ${err}`);
    process.exit(1);
  });
  await worker.waitUntilReady();

  const cpu0 = await redisCpuSeconds(admin);
  const start = process.hrtime.bigint();
  const producer = new Thread(__filename, { workerData: o });
  const produced = new Promise((resolve, reject) => {
    producer.on('error', reject);
    producer.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`producer ${code}`))));
  });
  const end = await drained;
  await produced;
  const cpu1 = await redisCpuSeconds(admin);
  const seconds = Number(end - start) / 1e9;
  const rate = o.tasks / seconds;
  const cpuUs = ((cpu1 - cpu0) * 1e6) / o.tasks;
  console.log(`bullmq tasks=${o.tasks} payload=${o.payload}B worker concurrency=${o.concurrency} ` +
              `(bullmq ${require('bullmq/package.json').version}, ${seconds.toFixed(2)} s)`);
  console.log(`bullmq       : ${rate.toFixed(0).padStart(9)} tasks/s  redis cpu ` +
              `${cpuUs.toFixed(2).padStart(5)} us/task`);
  await worker.close();
  await admin.quit();
}

if (isMainThread) {
  main().catch((e) => {
    console.error(`bullmq bench: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  });
} else {
  produce(workerData).then(
    () => parentPort.close(),
    (e) => {
      console.error(`bullmq producer: ${e && e.stack ? e.stack : e}`);
      process.exit(1);
    });
}

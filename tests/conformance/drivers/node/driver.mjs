// Node.js conformance driver (tests/conformance/DRIVERS.md), on the SDK's public API only (the
// package entry of sdk/node, built by ./prepare).
//   driver produce --redis URL --ns NS --cases FILE
//   driver consume --redis URL --ns NS --report FILE --corpus DIR --seconds N
import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, writeSync } from 'node:fs';
import { basename, join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { setTimeout as delay } from 'node:timers/promises';

const sdk = await import(new URL('../../../../sdk/node/dist/esm/index.js', import.meta.url).href);
const { Client, Worker, rawJson, parseLossless, hasUnsafeNumbers, stringifyJson } = sdk;

function parseArgs(argv) {
  const [command, ...rest] = argv;
  const o = { command };
  for (let i = 0; i < rest.length; i += 2) {
    const key = rest[i];
    if (!key?.startsWith('--') || rest[i + 1] === undefined) throw new Error(`bad argument ${key}`);
    o[key.slice(2)] = rest[i + 1];
  }
  return o;
}

async function produce(o) {
  const client = await Client.connect({ redis: o.redis });
  try {
    const lines = readFileSync(o.cases, 'utf8').split('\n').filter((l) => l.trim() !== '');
    for (const line of lines) {
      const c = JSON.parse(line);
      // The exact bytes of the payload file: no reparse.
      const payload = rawJson(readFileSync(c.payload_file));
      const r = await client.enqueue(o.ns, c.task_type, payload, {
        taskId: c.task_id ?? undefined,
        maxRetry: c.max_retry,
        delaySeconds: c.delay_seconds,
        executionTimeout: c.execution_timeout ?? undefined,
        extra: c.extra ?? {},
      });
      process.stdout.write(JSON.stringify({ case: c.case, task_id: r.taskId, status: r.status }) + '\n');
    }
  } finally {
    await client.close();
  }
}

async function consume(o) {
  const fd = openSync(o.report, 'a');
  // One write per line (several consumers never share a file, but a line must never be torn).
  const report = (obj) => writeSync(fd, stringifyJson(obj) + '\n');
  const retry = { retry: { baseMs: 100, maxMs: 1000 } };
  const ns = o.ns;
  const worker = new Worker({ redis: o.redis, blockMs: 1000, service: 'conformance-node' });

  worker.register(ns, 'conf_echo', (task) => {
    const caseName = task.extra.x_conformance_case;
    const line = {
      type: 'conf_echo', case: caseName, task_id: task.taskId, namespace: task.namespace, task_type: task.taskType,
      max_retry: task.maxRetry, delay_seconds: task.delaySeconds, created_at: task.createdAt,
      execution_timeout: task.executionTimeout ?? null, extra: task.extra,
      payload_sha256: createHash('sha256').update(task.payloadBytes).digest('hex'),
      payload_value_equal: null,
    };
    const file = typeof caseName === 'string' ? join(o.corpus, basename(caseName.replace(/^payload\//, '')) + '.json') : '';
    if (file !== '' && existsSync(file)) {
      const expected = readFileSync(file, 'utf8');
      if (hasUnsafeNumbers(expected) || hasUnsafeNumbers(task.payloadText)) {
        // JSON.parse would round these numbers: compare with the SDK's lossless parse instead.
        line.lossless_value_equal = isDeepStrictEqual(parseLossless(task.payloadText), parseLossless(expected));
      } else {
        line.payload_value_equal = isDeepStrictEqual(task.payload, JSON.parse(expected));
      }
    }
    report(line);
  }, retry);
  worker.register(ns, 'conf_fail', (task) => {
    report({ type: 'conf_fail', task_id: task.taskId, attempt: task.attempt });
    return Promise.reject(new Error(`conf_fail: attempt ${task.attempt} fails on purpose`));
  }, retry);
  worker.register(ns, 'conf_sleep', async (task, { signal }) => {
    report({ type: 'conf_sleep', task_id: task.taskId, attempt: task.attempt, started_ms: Date.now() });
    await delay(Number(task.payload.sleep_ms ?? 0), undefined, { signal });
  }, retry);
  worker.register(ns, 'conf_delay', (task) => {
    report({ type: 'conf_delay', task_id: task.taskId, started_ms: Date.now() });
  }, retry);
  worker.register(ns, 'conf_once', (task) => {
    report({ type: 'conf_once', task_id: task.taskId });
  }, retry);

  const stop = () => void worker.stop();
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  const timer = setTimeout(stop, Number(o.seconds) * 1000);
  await worker.run();
  clearTimeout(timer);
  closeSync(fd);
}

const o = parseArgs(process.argv.slice(2));
try {
  if (o.command === 'produce') await produce(o);
  else if (o.command === 'consume') await consume(o);
  else throw new Error(`usage: driver produce|consume ... (got ${o.command})`);
} catch (e) {
  process.stderr.write(`node driver: ${e?.stack ?? e}\n`);
  process.exit(1);
}

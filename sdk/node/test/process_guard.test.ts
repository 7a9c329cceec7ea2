// The process guard in real processes: a stray error after its attempt ended is a "strayError"
// event; failures that belong to no task behave as Node would without Baton, also under
// --unhandled-rejections=warn and with two copies of the SDK (ESM and CJS builds) in one process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isDone, serverAndClient, uniqueNs } from './helpers/baton.js';
import { SDK_ROOT } from './helpers/paths.js';
import { unhandledRejectionsMode } from '../src/process_guard.js';

const env = serverAndClient();
const ESM = pathToFileURL(join(SDK_ROOT, 'dist', 'esm', 'index.js')).href;
const CJS = join(SDK_ROOT, 'dist', 'cjs', 'index.js');

/** Runs `code` as an ES module (args: redis url, namespace); its exit code, stdout and stderr. */
function runApp(code: string, ns: string, nodeArgs: string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-guard-'));
  const file = join(dir, 'app.mjs');
  writeFileSync(file, code);
  return new Promise((resolve) => {
    execFile(process.execPath, [...nodeArgs, file, env.server.url, ns], { timeout: 20000 }, (err, stdout, stderr) => {
      rmSync(dir, { recursive: true, force: true });
      resolve({ code: err ? ((err as { code?: number }).code ?? -1) : 0, stdout, stderr });
    });
  });
}

test('--unhandled-rejections mode: the command line wins over NODE_OPTIONS', () => {
  assert.equal(unhandledRejectionsMode([], ''), 'throw');
  assert.equal(unhandledRejectionsMode(['--unhandled-rejections=warn'], ''), 'warn');
  assert.equal(unhandledRejectionsMode(['--unhandled-rejections', 'none'], ''), 'none');
  assert.equal(unhandledRejectionsMode([], '--max-old-space-size=100 --unhandled-rejections=strict'), 'strict');
  assert.equal(unhandledRejectionsMode(['--unhandled-rejections=warn'], '--unhandled-rejections=strict'), 'warn');
});

test('an error from code a handler started, thrown after its attempt ended: a strayError event, never a crash', async () => {
  const ns = uniqueNs();
  const task = await env.client.enqueue(ns, 'late', {});
  const out = await runApp(`import { Worker, silentLogger } from ${JSON.stringify(ESM)};
const [url, ns] = process.argv.slice(2);
const worker = new Worker({ redis: url, logger: silentLogger, blockMs: 200 }).register(ns, 'late', () => {
  setTimeout(() => { throw new Error('late failure'); }, 200);
});
worker.on('strayError', async (s) => {
  console.log(JSON.stringify({ taskId: s.taskId, how: s.how, message: s.error.message }));
  await worker.stop();
  console.log(JSON.stringify({ strayErrors: worker.stats().strayErrors }));
});
await worker.start();
`, ns);
  assert.equal(out.code, 0, out.stderr);
  const lines = out.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(lines, [{ taskId: task.taskId, how: 'uncaught exception', message: 'late failure' }, { strayErrors: 1 }]);
  assert.ok(await isDone(env.server.redis(), ns, task.taskId), 'the task itself succeeded');
});

test('--unhandled-rejections=warn: an application rejection outside any task is a warning, as without Baton', async () => {
  const out = await runApp(`import { Worker, silentLogger } from ${JSON.stringify(ESM)};
const [url, ns] = process.argv.slice(2);
const worker = new Worker({ redis: url, logger: silentLogger, blockMs: 200 }).register(ns, 'x', () => undefined);
await worker.start();
setTimeout(() => void Promise.reject(new Error('app rejection')), 10);
setTimeout(async () => { await worker.stop(); console.log('alive'); }, 500);
`, uniqueNs(), ['--unhandled-rejections=warn']);
  assert.equal(out.code, 0, out.stderr);
  assert.equal(out.stdout.trim(), 'alive');
  assert.match(out.stderr, /UnhandledPromiseRejectionWarning: Unhandled promise rejection: Error: app rejection/);
});

test('two copies of the SDK (ESM and CJS) in one process: an application exception still crashes it', async () => {
  const out = await runApp(`import { createRequire } from 'node:module';
import { Worker, silentLogger } from ${JSON.stringify(ESM)};
const cjs = createRequire(import.meta.url)(${JSON.stringify(CJS)});
const [url, ns] = process.argv.slice(2);
const a = new Worker({ redis: url, logger: silentLogger, blockMs: 200 }).register(ns, 'a', () => undefined);
const b = new cjs.Worker({ redis: url, logger: cjs.silentLogger, blockMs: 200 }).register(ns, 'b', () => undefined);
await a.start();
await b.start();
setTimeout(() => { throw new Error('application bug'); }, 10);
setTimeout(() => { console.log('swallowed'); process.exit(0); }, 1000);
`, uniqueNs());
  assert.equal(out.code, 1, `exit code (stdout: ${out.stdout})`);
  assert.doesNotMatch(out.stdout, /swallowed/);
  assert.match(out.stderr, /Error: application bug/);
});

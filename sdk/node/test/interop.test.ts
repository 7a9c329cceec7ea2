// Interop with the C++ side (docs/cli.md): tasks from `baton enqueue` run in the Node worker byte
// for byte; tasks from the Node client run in `baton work --exec`; batond promotes the Node
// worker's delayed tasks and retries; `baton task show` lists a Node failure with its JS stack.
// Needs the C++ build (BATON_BUILD_DIR, default build/release): skipped, loudly, without it; a
// failure instead when BATON_REQUIRE_BINARIES=1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { rawJson, type Task } from '../src/index.js';
import { waitFor } from './helpers/redis_server.js';
import { batonBuild } from './helpers/paths.js';
import { isDone, quietWorker, serverAndClient, uniqueNs } from './helpers/baton.js';

const run = promisify(execFile);
const build = batonBuild();
const skip = build === undefined ? 'the C++ build (baton, batond) is not there: set BATON_BUILD_DIR' : false;
if (skip) console.error(`interop.test: SKIPPED: ${skip}`);
// The repository's test script sets BATON_REQUIRE_BINARIES=1: there a missing build is a failure.
test('the C++ build is there when BATON_REQUIRE_BINARIES=1', { skip: process.env.BATON_REQUIRE_BINARIES !== '1' }, () => {
  assert.ok(build !== undefined, `${process.env.BATON_BUILD_DIR ?? 'build/release'}: no cli/baton and daemon/batond (BATON_REQUIRE_BINARIES=1)`);
});

const env = serverAndClient();

async function baton(...args: string[]): Promise<string> {
  const { stdout } = await run((build as { baton: string }).baton, ['--redis', env.server.url, ...args]);
  return stdout;
}

test('baton enqueue -> Node worker: payload bytes and envelope as the CLI wrote them', { skip }, async () => {
  const ns = uniqueNs();
  const payload = '{"n": 12345678901234567890, "price": 1.10, "s": "\\u00e9"}';
  const out = JSON.parse(await baton('--json', 'enqueue', '--ns', ns, '--type', 'from_cli', '--payload', payload, '--max-retry', '4',
    '--timeout', '9', '--extra', '{"headers":{"by":"cli"},"x_new":true}')) as { task_id: string; outcome: string };
  assert.equal(out.outcome, 'queued');
  const seen: Task[] = [];
  const worker = quietWorker(env.server.url).register(ns, 'from_cli', (t) => {
    seen.push(t);
  });
  await worker.start();
  try {
    await waitFor('ran', () => seen.length === 1);
    const t = seen[0] as Task;
    assert.equal(t.taskId, out.task_id);
    assert.equal(t.payloadText, payload);
    assert.equal(t.maxRetry, 4);
    assert.equal(t.executionTimeout, 9);
    assert.deepEqual(t.headers, { by: 'cli' });
    assert.equal(t.extra.x_new, true);
    await waitFor('done', () => isDone(env.server.redis(), ns, t.taskId));
  } finally {
    await worker.stop();
  }
});

test('Node client -> baton work --exec: the command gets the exact payload on stdin', { skip }, async () => {
  const ns = uniqueNs();
  const dir = mkdtempSync(join(tmpdir(), 'baton-interop-'));
  const payload = '{"emoji":"\u{1F600}","big":123456789012345678901234567890}';
  const r = await env.client.enqueue(ns, 'to_cli', rawJson(payload), { headers: { by: 'node' } });
  const work = spawn((build as { baton: string }).baton, ['--redis', env.server.url, 'work', '--ns', ns, '--type', 'to_cli',
    '--exec', `cat > "${dir}/$BATON_TASK_ID.json"; printf '%s' "$BATON_TASK" > "${dir}/$BATON_TASK_ID.task"`], { stdio: 'ignore' });
  try {
    await waitFor('the command ran', () => existsSync(join(dir, `${r.taskId}.task`)) && readFileSync(join(dir, `${r.taskId}.task`), 'utf8').length > 0);
    assert.equal(readFileSync(join(dir, `${r.taskId}.json`), 'utf8'), payload);
    const doc = JSON.parse(readFileSync(join(dir, `${r.taskId}.task`), 'utf8')) as Record<string, unknown>;
    assert.equal(doc.task_id, r.taskId);
    assert.deepEqual(doc.headers, { by: 'node' });
    await waitFor('done', () => isDone(env.server.redis(), ns, r.taskId));
  } finally {
    work.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
});

test('batond promotes delays and retries of a Node worker; baton task show lists the JS stack', { skip }, async () => {
  const ns = uniqueNs();
  const daemon = spawn((build as { batond: string }).batond, ['--redis-url', env.server.url, '--log-level', 'warn'], { stdio: 'ignore' });
  const starts: number[] = [];
  const worker = quietWorker(env.server.url)
    .register(ns, 'later', () => {
      starts.push(Date.now());
    })
    .register(ns, 'fails', function nodeHandlerThatFails() {
      throw new Error('from node');
    }, { retry: { baseMs: 100, maxMs: 200 } });
  await worker.start();
  try {
    const t0 = Date.now();
    await env.client.enqueue(ns, 'later', {}, { delaySeconds: 1 });
    const f = await env.client.enqueue(ns, 'fails', {}, { maxRetry: 1 });
    await waitFor('delayed ran', () => starts.length === 1, 20000);
    assert.ok((starts[0] as number) >= t0 + 990);
    const shown = await waitFor('dead with two attempts', async () => {
      const s = JSON.parse(await baton('--json', 'task', 'show', f.taskId, '--ns', ns)) as { state: string; errors: { error: string; stack: string; kind: string }[] };
      return s.state === 'dead' ? s : undefined;
    }, 20000);
    assert.equal(shown.errors.length, 2);
    for (const e of shown.errors) {
      assert.equal(e.error, 'Error: from node');
      assert.match(e.stack, /nodeHandlerThatFails/);
    }
  } finally {
    await worker.stop();
    daemon.kill('SIGTERM');
  }
});

// Seed 3.3 in one process: an HTTP server and a worker whose handlers misbehave in every way
// (a rejection nobody awaits, an exception thrown from a timer, a plain throw, a promise that never
// settles, synchronous CPU work on the event loop, CPU work in a thread that ignores its timeout).
// Each fails (or reports) its own task; the process never dies and the HTTP server keeps
// answering. Then SIGTERM: tasks in flight finish and are acked before the process exits 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { waitFor } from './helpers/redis_server.js';
import { attemptErrors, isDead, isDone, serverAndClient, uniqueNs } from './helpers/baton.js';
import { Child } from './helpers/child.js';

const env = serverAndClient();

function get(port: number): Promise<number> {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', timeout: 10000 }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve(Date.now() - t0) : reject(new Error(`HTTP ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('HTTP timeout')));
    req.end();
  });
}

test('misbehaving handlers fail their own tasks; the process and its HTTP server carry on', async () => {
  const ns = uniqueNs();
  const app = new Child('misbehaving_app.js', [env.server.url, ns]);
  try {
    const port = (await app.line('port')).port as number;
    const latencies: number[] = [];
    const httpErrors: string[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        try {
          latencies.push(await get(port));
        } catch (e) {
          httpErrors.push(String(e));
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();

    const e = (type: string, payload: object, options = {}) => env.client.enqueue(ns, type, payload, { maxRetry: 0, ...options });
    const floating = await e('floating', {});
    const timer = await e('timer', {});
    const throws = await e('throws', {}, { maxRetry: 1 });
    const hangs = await e('hangs', {}, { executionTimeout: 1 });
    const blocker = await e('blocker', {});
    const cpuLong = await e('cpu', { ms: 60000 }, { executionTimeout: 1 });
    const cpuShort = await e('cpu', { ms: 50 });
    const cpuFail = await e('cpu', { fail: 'no such image', nonRetryable: true }, { maxRetry: 3 });
    const r = env.server.redis();
    await waitFor('every misbehaving task dead', async () => {
      for (const [type, id] of [['floating', floating], ['timer', timer], ['throws', throws], ['hangs', hangs], ['cpu', cpuLong], ['cpu', cpuFail]] as const) {
        if (!(await isDead(r, ns, type, id.taskId))) return false;
      }
      return true;
    }, 30000);
    await waitFor('blocker and short cpu done', async () => (await isDone(r, ns, blocker.taskId)) && (await isDone(r, ns, cpuShort.taskId)));

    const first = async (id: string) => (await attemptErrors(r, ns, id))[0];
    assert.equal((await first(floating.taskId))?.error, 'unhandled rejection: Error: forgotten promise');
    assert.equal((await first(timer.taskId))?.error, 'uncaught exception: RangeError: thrown in a timer callback');
    assert.equal((await attemptErrors(r, ns, throws.taskId)).length, 2);
    assert.equal((await first(hangs.taskId))?.kind, 'timeout');
    assert.equal((await first(cpuLong.taskId))?.kind, 'timeout');
    const cf = await first(cpuFail.taskId);
    assert.equal(cf?.kind, 'non_retryable');
    assert.match(cf?.stack ?? '', /Error: no such image\n\s+at cpuHandler/);

    // The blocking handler was reported, by name.
    const blocked = (await app.line('blocked')).blocked as { source: string; blockedMs: number; types: { type: string }[] };
    assert.equal(blocked.source, 'handler');
    assert.deepEqual(blocked.types.map((t) => t.type), ['blocker']);
    assert.ok(blocked.blockedMs >= 350);

    polling = false;
    await poller;
    assert.ok(app.alive, `the process is alive (stderr: ${app.stderr.slice(-500)})`);
    assert.deepEqual(httpErrors, []);
    assert.ok(latencies.length >= 10, `HTTP polled throughout (${latencies.length})`);
    // Only the synchronous 400 ms handler may hold a request up (generous bound for a busy CI box).
    assert.ok(Math.max(...latencies) < 3000, `HTTP latencies ${JSON.stringify(latencies)}`);

    // Graceful shutdown: tasks in flight when SIGTERM arrives finish and are acked.
    const slow = await env.client.enqueueMany([{ namespace: ns, taskType: 'slowok', payload: {} }, { namespace: ns, taskType: 'slowok', payload: {} }]);
    await waitFor('both running', async () => Number(((await r.xpending(`baton:v2:{${ns}}:stream:slowok`, 'baton')) as [number])[0]) === 2);
    app.kill('SIGTERM');
    const exit = await app.exited;
    assert.deepEqual(exit, { code: 0, signal: null }, app.stderr);
    for (const s of slow) assert.ok(await isDone(r, ns, s.taskId), 'acked during the grace');
    const stopped = (await app.line('stopped')).stats as { succeeded: number; strayErrors: number; timedOut: number };
    assert.equal(stopped.strayErrors, 2);
    assert.equal(stopped.timedOut, 2);
    assert.equal(stopped.succeeded, 4);
  } finally {
    app.kill();
  }
});

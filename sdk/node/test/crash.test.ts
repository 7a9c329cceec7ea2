// Crash recovery: a worker process killed with SIGKILL in the middle of its tasks loses nothing.
// Its leases end (nobody heartbeats them), another worker's maintenance takes the tasks back
// (kind lease_expired) and runs them; every task ends done.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Task } from '../src/index.js';
import { waitFor } from './helpers/redis_server.js';
import { attemptErrors, isDone, quietWorker, serverAndClient, uniqueNs } from './helpers/baton.js';
import { Child } from './helpers/child.js';

const env = serverAndClient();

test('kill -9 of a worker mid-run: every task still runs to done', async () => {
  const ns = uniqueNs();
  const child = new Child('crash_worker.js', [env.server.url, ns]);
  try {
    await child.line('ready');
    const tasks = await env.client.enqueueMany(Array.from({ length: 40 }, (_, i) => ({ namespace: ns, taskType: 'job', payload: { i } })));
    // Kill while tasks are running: after some finished, at a moment when a started task has not
    // (not at the instant between two fetches, when nothing runs).
    const running = () => {
      const done = new Set(child.lines.filter((l) => 'finished' in l).map((l) => l.finished));
      return child.lines.filter((l) => 'started' in l && !done.has(l.started)).length;
    };
    await waitFor('some finished and more running', () => child.lines.filter((l) => 'finished' in l).length >= 8 && running() > 0);
    child.kill('SIGKILL');
    await child.exited;
    const finished = new Set(child.lines.filter((l) => 'finished' in l).map((l) => l.finished as string));
    const interrupted = child.lines.filter((l) => 'started' in l && !finished.has(l.started as string)).map((l) => l.started as string);
    assert.ok(interrupted.length > 0, 'the kill interrupted running tasks');

    const ranHere: string[] = [];
    const rescuer = quietWorker(env.server.url, { maintenance: true })
      .register(ns, 'job', (task: Task) => {
        ranHere.push(task.taskId);
      }, { concurrency: 8, leaseMs: 1000, retry: { baseMs: 50, maxMs: 100 } });
    await rescuer.start();
    try {
      const r = env.server.redis();
      await waitFor('all 40 done', async () => {
        for (const t of tasks) if (!(await isDone(r, ns, t.taskId))) return false;
        return true;
      }, 30000);
      for (const id of interrupted) {
        assert.ok(ranHere.includes(id), `interrupted task ${id} ran again`);
      }
      for (const id of interrupted) {
        const errors = await attemptErrors(r, ns, id);
        assert.equal(errors.length, 0, 'a done task keeps no error record');
      }
      // Nothing was lost: every task ran to the end in one worker or the other. (A task the dead
      // worker finished but had not acked yet runs again: at-least-once.)
      assert.equal(new Set([...finished, ...ranHere]).size, 40);
    } finally {
      await rescuer.stop();
    }
  } finally {
    child.kill();
  }
});

// Reconnect: Redis restarts (empty: no persistence) under a running worker and client. Until the
// functions library is loaded again the version check of the new connection refuses to run
// anything; once it is, work resumes without a restart of the worker.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { BatonError, Client, Worker } from '../src/index.js';
import { RedisServer, waitFor } from './helpers/redis_server.js';
import { isDone, uniqueNs } from './helpers/baton.js';

let server: RedisServer;

before(async () => {
  server = await RedisServer.start();
});
after(async () => {
  await server.close();
});

test('a Redis restart: the worker and the client reconnect and check the library version again', async () => {
  const ns = uniqueNs();
  const ran: string[] = [];
  const warnings: string[] = [];
  const worker = new Worker({ redis: server.url, blockMs: 500, logger: { warn: (m) => warnings.push(m), error: (m) => warnings.push(m) } })
    .register(ns, 'r', (task) => {
      ran.push(task.taskId);
    }, { concurrency: 2, leaseMs: 2000 });
  await worker.start();
  const client = await Client.connect({ redis: server.url });
  try {
    const before = await client.enqueue(ns, 'r', { n: 1 });
    await waitFor('ran before', () => ran.includes(before.taskId));

    await server.restart({ loadLibrary: false });
    // The client's next call reconnects and refuses: no library.
    await waitFor('client sees the missing library', async () => {
      try {
        await client.enqueue(ns, 'r', {});
        return false;
      } catch (e) {
        return e instanceof BatonError && e.code === 'version_mismatch';
      }
    });
    await waitFor('the worker reports it', () => warnings.some((w) => /version none loaded in Redis.*run 'baton init'/.test(w)));

    await server.loadLibrary();
    const afterRestart = await client.enqueueMany(Array.from({ length: 5 }, (_, i) => ({ namespace: ns, taskType: 'r', payload: { i } })));
    await waitFor('ran after', async () => {
      for (const t of afterRestart) if (!(await isDone(server.redis(), ns, t.taskId))) return false;
      return true;
    }, 30000);
    assert.equal(ran.length, 6);
    // The empty Redis got the namespace directory (a CLI convenience) back from the client.
    assert.ok(await server.redis().sismember('baton:v2:namespaces', ns), 'namespace directory refilled after the restart');
  } finally {
    await client.close();
    await worker.stop();
  }
});

// waitReplicas on a single Redis with one replica (REPLICAOF): WAIT after the enqueue on the same
// connection; fewer acknowledgements than asked -> unavailable, the task written all the same.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, EnqueueError } from '../src/index.js';
import { record, uniqueNs } from './helpers/baton.js';
import { RedisServer, waitFor } from './helpers/redis_server.js';

let primary: RedisServer;
let replica: RedisServer;

before(async () => {
  primary = await RedisServer.start();
  replica = await RedisServer.start({ loadLibrary: false });
  await primary.redis().call('CONFIG', 'SET', 'repl-diskless-sync-delay', '0'); // else a 5 s wait
  await replica.redis().call('REPLICAOF', '127.0.0.1', String(primary.port));
  await waitFor('replication link up', async () => /master_link_status:up/.test(String(await replica.redis().call('INFO', 'replication'))));
});

after(async () => {
  await replica?.close();
  await primary?.close();
});

test('waitReplicas 1 is met by the replica; 2 fails as unavailable naming K of N, after writing the task', async () => {
  const ns = uniqueNs();
  const durable = await Client.connect({ redis: primary.url, waitReplicas: 1 });
  const greedy = await Client.connect({ redis: primary.url, waitReplicas: 2, waitTimeoutMs: 200 });
  try {
    const ok = await durable.enqueue(ns, 'send', { to: 'a' });
    assert.equal(ok.status, 'queued');
    // The replica has it already: WAIT returned only once it acknowledged the write.
    assert.match(String(await replica.redis().hget(`baton:v2:{${ns}}:tasks`, ok.taskId)), /^queued\|send\|/);

    const err = await greedy.enqueueMany([{ namespace: ns, taskType: 'send', payload: {} }, { namespace: uniqueNs(), taskType: 'send', payload: {} }])
      .then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof EnqueueError, String(err));
    assert.equal(err.code, 'unavailable');
    assert.match(err.message, /written on the primary but acknowledged by only 1 of 2 replicas within 200 ms \(waitReplicas\); it may still run/);
    assert.deepEqual(err.results.map((r) => r?.status), ['queued', 'queued']);
    assert.match(String(await record(primary.redis(), ns, err.taskIds[0] as string)), /^queued\|send\|/);
  } finally {
    await durable.close();
    await greedy.close();
  }
});

// Quick start, worker side: run send_email tasks until SIGTERM / Ctrl-C.
//   node build-test/examples/worker.js [redis://127.0.0.1:6379]
import { NonRetryableError, Worker } from '@baton/client';

interface Email { to: string; template: string }

// maintenance: this process also runs delayed tasks and retries when due and takes back the tasks
// of a crashed worker (expired leases); leave it out where batond runs.
const worker = new Worker({ redis: process.argv[2] ?? 'redis://127.0.0.1:6379', handleSignals: true, maintenance: true });
worker.register<Email>('shop', 'send_email', async (task, { signal }) => {
  if (!task.payload.to.includes('@')) throw new NonRetryableError(`bad address ${task.payload.to}`);
  await fetchLikeSend(task.payload, signal); // pass the signal on: it aborts at execution_timeout
  console.log(`sent ${task.payload.template} to ${task.payload.to} (task ${task.taskId}, attempt ${task.attempt})`);
}, { concurrency: 8 });
await worker.run(); // resolves after a graceful stop
console.log('stopped', JSON.stringify(worker.stats()));

// Stands in for the real sending call (an HTTP request to the mail service, say).
async function fetchLikeSend(_email: Email, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
}

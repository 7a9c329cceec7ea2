// Quick start, producer side: enqueue one task and print the outcome.
//   node build-test/examples/producer.js [redis://127.0.0.1:6379]
import { Client } from '@baton/client';

const client = await Client.connect({ redis: process.argv[2] ?? 'redis://127.0.0.1:6379' });
const result = await client.enqueue('shop', 'send_email', { to: 'ada@example.com', template: 'welcome' }, {
  maxRetry: 5, // retried with backoff, then dead-lettered
  executionTimeout: 30, // seconds; the handler's AbortSignal fires past it
});
console.log(result.status, result.taskId); // "queued 0190f3c1-..."
await client.close();

// Trace context: the producer makes a PRODUCER span per task (child of the active span) and sends
// its context as trace.traceparent (+ tracestate); the worker runs each attempt in a CONSUMER span
// whose parent is that traceparent. Uses a tiny in-test TracerProvider (the API package alone
// records nothing) that, like the real SDK, passes the parent's trace state on.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { context, createTraceState, trace, type Context, type ContextManager, type Span, type SpanContext, type Tracer, type TracerProvider } from '@opentelemetry/api';
import { Client, formatTraceparent, parseTraceparent, type Task } from '../src/index.js';
import { RedisServer, waitFor } from './helpers/redis_server.js';
import { quietWorker, uniqueNs } from './helpers/baton.js';

interface Recorded { name: string; kind: number | undefined; parent: SpanContext | undefined; ctx: SpanContext; ended: boolean; attributes: Record<string, unknown> }
const recorded: Recorded[] = [];

class RecordingSpan {
  constructor(private readonly rec: Recorded) {}
  spanContext() { return this.rec.ctx; }
  setAttribute() { return this; }
  setAttributes() { return this; }
  addEvent() { return this; }
  addLink() { return this; }
  addLinks() { return this; }
  setStatus() { return this; }
  updateName() { return this; }
  end() { this.rec.ended = true; }
  isRecording() { return true; }
  recordException() { /* kept out of the test */ }
}

const tracer = {
  startSpan(name: string, options?: { kind?: number; attributes?: Record<string, unknown> }, ctx?: Context) {
    const parent = trace.getSpanContext(ctx ?? context.active());
    const rec: Recorded = {
      name, kind: options?.kind, parent, ended: false, attributes: options?.attributes ?? {},
      ctx: {
        traceId: parent?.traceId ?? randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex'), traceFlags: 1,
        ...(parent?.traceState ? { traceState: parent.traceState } : {}),
      },
    };
    recorded.push(rec);
    return new RecordingSpan(rec) as unknown as Span;
  },
  startActiveSpan() { throw new Error('not used'); },
} as unknown as Tracer;

const provider: TracerProvider = { getTracer: () => tracer };

class AlsContextManager implements ContextManager {
  private readonly als = new AsyncLocalStorage<Context>();
  active(): Context { return this.als.getStore() ?? ROOT; }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.als.run(ctx, () => fn.call(thisArg, ...args));
  }
  bind<T>(_ctx: Context, target: T): T { return target; }
  enable() { return this; }
  disable() { return this; }
}
let ROOT: Context;

let server: RedisServer;
let client: Client;

before(async () => {
  const api = await import('@opentelemetry/api');
  ROOT = api.ROOT_CONTEXT;
  api.context.setGlobalContextManager(new AlsContextManager());
  api.trace.setGlobalTracerProvider(provider);
  server = await RedisServer.start();
  client = await Client.connect({ redis: server.url });
});
after(async () => {
  await client.close();
  await server.close();
});

test('traceparent parse and format follow W3C', () => {
  const tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  assert.deepEqual(parseTraceparent(tp), { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 });
  assert.equal(formatTraceparent(parseTraceparent(tp) as never), tp);
  assert.equal(parseTraceparent('00-00000000000000000000000000000000-b7ad6b7169203331-01'), undefined);
  assert.equal(parseTraceparent('ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'), undefined);
  assert.equal(parseTraceparent('garbage'), undefined);
});

test('active span -> PRODUCER span -> task traceparent and tracestate -> CONSUMER span, across the queue', async () => {
  const ns = uniqueNs();
  let inHandler: SpanContext | undefined;
  const seen: Task[] = [];
  const worker = quietWorker(server.url).register(ns, 'traced', (task) => {
    seen.push(task);
    inHandler = trace.getSpanContext(context.active());
  });
  await worker.start();
  try {
    const remote = trace.setSpanContext(ROOT, {
      traceId: randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex'), traceFlags: 1, isRemote: true,
      traceState: createTraceState('vendor=abc'),
    });
    const producerSpan = tracer.startSpan('checkout', {}, remote);
    const r = await context.with(trace.setSpan(ROOT, producerSpan), () => client.enqueue(ns, 'traced', { a: 1 }));
    const send = recorded.find((s) => s.name === `send ${ns}/traced`);
    assert.ok(send, 'a PRODUCER span per task');
    assert.equal(send.kind, 3, 'SpanKind.PRODUCER');
    assert.ok(send.ended, 'ended when enqueue returned');
    assert.equal(send.parent?.spanId, producerSpan.spanContext().spanId, 'child of the active span');
    assert.equal(send.attributes['messaging.message.id'], r.taskId);
    assert.equal(send.attributes['messaging.operation.type'], 'send');
    await waitFor('ran', () => seen.length === 1);
    assert.equal(seen[0]?.trace?.traceparent, formatTraceparent(send.ctx));
    assert.equal(seen[0]?.trace?.tracestate, 'vendor=abc');
    const consumer = await waitFor('consumer span ended', () => recorded.find((s) => s.name === `process ${ns}/traced` && s.ended));
    assert.equal(consumer.kind, 1 + 3, 'SpanKind.CONSUMER');
    assert.equal(consumer.parent?.traceId, producerSpan.spanContext().traceId);
    assert.equal(consumer.parent?.spanId, send.ctx.spanId, 'child of the PRODUCER span');
    assert.equal(consumer.parent?.traceState?.serialize(), 'vendor=abc');
    assert.equal(consumer.attributes['messaging.message.id'], r.taskId);
    assert.equal(inHandler?.spanId, consumer.ctx.spanId, 'the handler runs inside the consumer span');
    // An explicit trace wins over the active span.
    const explicit = '00-11111111111111111111111111111111-2222222222222222-01';
    const sends = recorded.filter((s) => s.name === `send ${ns}/traced`).length;
    await context.with(trace.setSpan(ROOT, producerSpan), () => client.enqueue(ns, 'traced', {}, { trace: { traceparent: explicit } }));
    await waitFor('ran twice', () => seen.length === 2);
    assert.equal(seen[1]?.trace?.traceparent, explicit);
    assert.equal(recorded.filter((s) => s.name === `send ${ns}/traced`).length, sends, 'no PRODUCER span for a task with its own trace');
    // enqueueMany: one PRODUCER span per task.
    await context.with(trace.setSpan(ROOT, producerSpan), () => client.enqueueMany([1, 2, 3].map((i) => ({ namespace: ns, taskType: 'traced', payload: { i } }))));
    assert.equal(recorded.filter((s) => s.name === `send ${ns}/traced` && s.ended).length, sends + 3);
  } finally {
    await worker.stop();
  }
});

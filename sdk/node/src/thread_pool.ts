// Worker threads for CPU-bound task types (Worker.registerThreaded). A handler that computes for
// seconds would freeze the main event loop (and every other handler and the HTTP server of the
// process); in a thread it only occupies that thread. Each thread loads the handler module once
// and runs one task at a time, so a type's concurrency is its thread count.
//
// Cancellation: on execution_timeout or shutdown the thread's AbortSignal is aborted; a thread
// still busy terminateAfterMs later (CPU-bound code never looks at the signal) is terminated and
// replaced: the only way to really stop synchronous JavaScript.
import { Worker as Thread } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import type { Task } from './task.js';

/** What a threaded handler receives instead of a Task (a structured-clone-able copy). */
export interface ThreadTask {
  taskId: string;
  namespace: string;
  taskType: string;
  maxRetry: number;
  delaySeconds: number;
  createdAt: number;
  executionTimeout: number | undefined;
  extra: Record<string, unknown>;
  attempt: number;
  streamId: string;
  /** The payload text exactly as delivered. */
  payloadText: string;
  /** JSON.parse(payloadText). */
  payload: unknown;
}

// Runs inside each thread. Kept as plain JavaScript text, not a function serialized with
// toString(): the CommonJS build compiles import() to require() plus a module-level helper that
// does not exist in the thread. The module is loaded once; the thread says "ready" or "loadError"
// (a rejection nobody handled would kill the thread, and its replacement, forever).
const THREAD_CODE = `'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const controllers = new Map();
const describe = (e) => ({
  name: typeof e?.name === 'string' ? e.name : 'Error',
  message: typeof e?.message === 'string' ? e.message : String(e),
  stack: typeof e?.stack === 'string' ? e.stack : '',
  nonRetryable: e?.nonRetryable === true,
});
const handler = import(workerData.module).then((m) => {
  const h = m.default ?? m.handler;
  if (typeof h !== 'function') throw new Error(workerData.module + ' exports no default (or "handler") function');
  return h;
});
handler.then(() => parentPort.postMessage({ type: 'ready' }),
  (e) => parentPort.postMessage({ type: 'loadError', error: describe(e) }));
parentPort.on('message', async (msg) => {
  if (msg.type === 'abort') {
    controllers.get(msg.id)?.abort(new Error(msg.reason ?? 'aborted'));
    return;
  }
  const ac = new AbortController();
  controllers.set(msg.id, ac);
  try {
    const h = await handler;
    const task = msg.task;
    task.payload = JSON.parse(task.payloadText);
    await h(task, { signal: ac.signal, attempt: task.attempt });
    parentPort.postMessage({ type: 'done', id: msg.id, ok: true });
  } catch (e) {
    parentPort.postMessage({ type: 'done', id: msg.id, ok: false, error: describe(e) });
  } finally {
    controllers.delete(msg.id);
  }
});
`;

interface Job {
  id: number;
  task: ThreadTask;
  signal: AbortSignal;
  resolve: () => void;
  reject: (e: Error) => void;
  killTimer?: NodeJS.Timeout;
}

interface Slot {
  thread: Thread;
  job: Job | undefined;
  /** Terminated or failed: takes no job, replaced when its 'exit' comes. */
  dead: boolean;
  /** The handler module loaded in this thread. */
  loaded: boolean;
  /** Resolves once loaded; rejects when the module cannot be loaded. */
  ready: Promise<void>;
}

function rebuildError(e: { name: string; message: string; stack: string; nonRetryable: boolean }): Error {
  const err = new Error(e.message) as Error & { nonRetryable?: boolean };
  err.name = e.name;
  if (e.stack) err.stack = e.stack;
  if (e.nonRetryable) err.nonRetryable = true;
  return err;
}

export class ThreadPool {
  private readonly module: string;
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;
  /** The handler module failed to load: no thread is started again, every task fails with this. */
  private broken: Error | undefined;

  /** `module`: a file URL or path of an ES module (or CJS file) exporting the handler as default. */
  constructor(module: string | URL, private readonly size: number, private readonly terminateAfterMs: number,
    private readonly onThreadError: (message: string) => void) {
    const m = module instanceof URL ? module.href : module;
    this.module = /^[a-z][a-z0-9+.-]*:/i.test(m) ? m : pathToFileURL(m).href;
  }

  /** Starts the threads; rejects when the handler module cannot be loaded in them. */
  async start(): Promise<void> {
    for (let i = 0; i < this.size; i++) this.slots.push(this.spawn());
    await Promise.all(this.slots.map((s) => s.ready));
  }

  private spawn(): Slot {
    let settle: (e?: Error) => void = () => undefined;
    const ready = new Promise<void>((resolve, reject) => {
      settle = (e) => (e === undefined ? resolve() : reject(e));
    });
    ready.catch(() => undefined); // start() reports it; later on, loadFailed() does
    const slot: Slot = { thread: new Thread(THREAD_CODE, { eval: true, workerData: { module: this.module } }), job: undefined, dead: false, loaded: false, ready };
    slot.thread.on('message', (msg: { type: string; id: number; ok: boolean; error?: Parameters<typeof rebuildError>[0] }) => {
      if (msg.type === 'ready') {
        slot.loaded = true;
        settle();
        return;
      }
      if (msg.type === 'loadError') {
        const e = msg.error as Parameters<typeof rebuildError>[0];
        const err = new Error(`handler module ${this.module} failed to load: ${e.name}: ${e.message}`);
        settle(err);
        this.loadFailed(err);
        return;
      }
      const job = slot.job;
      if (msg.type !== 'done' || job === undefined || job.id !== msg.id) return;
      this.finish(slot, msg.ok ? undefined : rebuildError(msg.error as Parameters<typeof rebuildError>[0]));
    });
    slot.thread.on('error', (e: Error) => {
      // Something escaped the handler inside the thread (the thread then exits): fail its task.
      this.onThreadError(`thread of ${this.module}: ${e.message}`);
      slot.dead = true;
      this.finish(slot, e);
    });
    slot.thread.on('exit', (code) => {
      slot.dead = true;
      const err = new Error(`handler thread exited with code ${code}`);
      settle(err);
      this.finish(slot, err);
      // A thread that never loaded the module would die again when replaced: stop there.
      if (!slot.loaded && !this.closed) this.loadFailed(new Error(`handler thread of ${this.module} exited with code ${code} before the module loaded`));
      if (!this.closed && this.broken === undefined) {
        const index = this.slots.indexOf(slot);
        if (index >= 0) this.slots[index] = this.spawn();
        this.pump();
      }
    });
    return slot;
  }

  /** The module cannot be loaded: fail what waits and every later task; start no more threads. */
  private loadFailed(e: Error): void {
    if (this.broken !== undefined || this.closed) return;
    this.broken = e;
    this.onThreadError(e.message);
    for (const job of this.queue.splice(0)) job.reject(e);
    for (const s of this.slots) {
      s.dead = true;
      this.finish(s, e);
      void s.thread.terminate();
    }
  }

  private finish(slot: Slot, error: Error | undefined): void {
    const job = slot.job;
    if (job === undefined) return;
    slot.job = undefined;
    if (job.killTimer) clearTimeout(job.killTimer);
    if (error === undefined) job.resolve();
    else job.reject(error);
    this.pump();
  }

  /** Runs `task` on the next idle thread; rejects with the handler's error. */
  run(task: Task, signal: AbortSignal): Promise<void> {
    if (this.closed) return Promise.reject(new Error('handler threads are closed'));
    if (this.broken !== undefined) return Promise.reject(this.broken);
    return new Promise<void>((resolve, reject) => {
      const copy: ThreadTask = {
        taskId: task.taskId, namespace: task.namespace, taskType: task.taskType, maxRetry: task.maxRetry,
        delaySeconds: task.delaySeconds, createdAt: task.createdAt, executionTimeout: task.executionTimeout,
        extra: { ...task.extra }, attempt: task.attempt, streamId: task.streamId, payloadText: task.payloadText, payload: undefined,
      };
      const job: Job = { id: this.nextId++, resolve, reject, task: copy, signal };
      this.queue.push(job);
      const onAbort = () => this.abort(job);
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
      this.pump();
    });
  }

  /** Starts queued jobs on idle threads. */
  private pump(): void {
    while (this.queue.length > 0) {
      const slot = this.slots.find((s) => s.job === undefined && !s.dead);
      if (slot === undefined) return;
      const job = this.queue.shift() as Job;
      slot.job = job;
      slot.thread.postMessage({ type: 'run', id: job.id, task: job.task });
    }
  }

  private abort(job: Job): void {
    const queued = this.queue.indexOf(job);
    const reason = job.signal.reason instanceof Error ? job.signal.reason.message : String(job.signal.reason);
    if (queued >= 0) {
      this.queue.splice(queued, 1);
      job.reject(new Error(`aborted before a thread was free (${reason})`));
      return;
    }
    const slot = this.slots.find((s) => s.job === job);
    if (slot === undefined) return;
    slot.thread.postMessage({ type: 'abort', id: job.id, reason });
    job.killTimer = setTimeout(() => {
      if (slot.job !== job) return;
      // Still busy: synchronous code ignoring the signal. Stop it the hard way.
      slot.dead = true;
      this.finish(slot, new Error(`handler thread terminated ${this.terminateAfterMs} ms after abort (${reason})`));
      void slot.thread.terminate();
    }, this.terminateAfterMs);
  }

  /** Terminates every thread (running tasks are left to their lease). */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new Error('handler threads are closed'));
    await Promise.all(this.slots.map((s) => s.thread.terminate()));
  }
}

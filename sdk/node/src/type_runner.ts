// Everything a Worker runs for one (namespace, task type), as the C++ TypeRunner: a fetch loop
// with its own Redis connection that asks baton_v2_dequeue for at most as many tasks as the type
// has free concurrency (a fetched task is leased to this consumer, so it never fetches ahead), and
// sends the finished tasks' baton_v2_ack (batched, up to 256 per call) and baton_v2_fail calls in
// the same pipeline as its next dequeue: one round trip carries both. With nothing to fetch it
// waits in XREAD BLOCK (at most 100 ms while tasks are in flight, so their acks go out promptly).
// Types never share a connection, so one type's backlog or slowness cannot delay another.

import { fromRedisError } from './baton_error.js';
import { commandOf, type FunctionCall } from './function_call.js';
import { ack as ackCall, dequeue as dequeueCall, fail as failCall, type AckItem } from './generated/calls.js';
import { keyOf } from './keys.js';
import { RedisLink, type LinkOptions, type RedisHandle } from './redis_link.js';
import { Backoff, sleep, type RetryPolicy } from './backoff.js';
import { runInBoundary, timeoutOutcome, outcomeOfError, type AttemptScope, type FailureKind, type Outcome } from './attempt.js';
import { decodeEntry, ENTRY_VALUES, MalformedEntry, type PayloadParse, type Task } from './task.js';
import type { AttemptSpan } from './tracing.js';
import type { SharedSlots } from './shared_slots.js';

const ACKS_PER_CALL = 256;
const BUSY_BLOCK_MS = 100;

/** What a handler gets besides the task. */
export interface TaskContext {
  /** Aborted when the attempt must stop: execution_timeout passed, the lease was lost, or shutdown. */
  readonly signal: AbortSignal;
  /** 1 on the first run, 2 on the first retry, ... */
  readonly attempt: number;
  /** Date.now() value at which execution_timeout ends the attempt; undefined without a limit. */
  readonly deadline: number | undefined;
  /** This worker's consumer name. */
  readonly consumer: string;
}

/** A handler: resolve (or return) for success; throw or reject to fail the attempt. */
export type Handler<P = unknown> = (task: Task<P>, context: TaskContext) => unknown;

/** The counters a runner shares with its Worker (counted when Redis confirmed the outcome). */
export interface Counters {
  succeeded: number;
  failed: number;
  dead: number;
  malformed: number;
  timedOut: number;
  leaseLost: number;
  strayErrors: number;
}

/** What the runner needs from its Worker. */
export interface RunnerHost {
  readonly counters: Counters;
  warn(message: string, details?: Record<string, unknown>): void;
  /** The synchronous part of a handler call took `ms`. */
  handlerSync(ns: string, type: string, taskId: string, ms: number): void;
  /** A retry of this type is due at dueMs (Unix ms, Redis clock). */
  retryScheduled(ns: string, type: string, dueMs: number): void;
  /** A span for the attempt, when tracing is on and OpenTelemetry present. */
  startSpan(task: Task): AttemptSpan | undefined;
  /** An attempt failed (for the Worker's "failed" event). */
  attemptFailed(info: FailedAttempt): void;
  /** A failure escaped code started by a handler after its attempt ended (for the "strayError" event). */
  strayAfterEnd(info: StrayError): void;
}

/** A rejection or exception from code a handler started, after that attempt had ended. */
export interface StrayError {
  readonly namespace: string;
  readonly taskType: string;
  readonly taskId: string;
  /** "unhandled rejection" or "uncaught exception". */
  readonly how: string;
  readonly error: unknown;
}

export interface FailedAttempt {
  readonly namespace: string;
  readonly taskType: string;
  readonly taskId: string;
  readonly kind: FailureKind;
  readonly message: string;
  /** "retry", "dead" or "stale" (the task was no longer ours). */
  readonly verdict: string;
}

export interface RunnerSettings {
  /** The namespace (what handlers see as task.namespace). */
  readonly ns: string;
  /** The partition's storage namespace whose keys this runner uses: ns, or "ns:p" (partitions.ts). */
  readonly storageNs: string;
  readonly type: string;
  readonly handler: Handler;
  readonly concurrency: number;
  readonly retry: RetryPolicy;
  /** The lease every dequeue and extend asks for (resolved: never 0). */
  readonly leaseMs: number;
  readonly group: string;
  readonly consumer: string;
  readonly fetchBatch: number;
  readonly blockMs: number;
  readonly payloadParse: PayloadParse;
  readonly redisUrl: string;
  readonly linkOptions: LinkOptions;
  /** A limit shared with the type's other partitions (threaded types), on top of concurrency. */
  readonly shared?: SharedSlots | undefined;
}

/** One attempt in progress. */
class Running implements AttemptScope {
  readonly ac = new AbortController();
  timer: NodeJS.Timeout | undefined;
  heartbeating = true;
  done = false;
  /** The handler's promise settled (it may outlive the attempt: a timeout, a lost lease). */
  settled = false;
  abandoned = false;
  span: AttemptSpan | undefined;

  constructor(readonly runner: TypeRunner, readonly task: Task, readonly namespace: string, readonly type: string) {}

  get taskId(): string {
    return this.task.taskId;
  }

  onStrayError(e: unknown, how: string): void {
    this.runner.strayError(this, e, how);
  }
}

interface Completion {
  readonly id: string;
  readonly sid: string;
  readonly outcome: Outcome;
}

export class TypeRunner {
  readonly settings: RunnerSettings;
  private readonly host: RunnerHost;
  private readonly link: RedisLink;
  private readonly streamKey: string;
  private readonly running = new Set<Running>();
  private completions: Completion[] = [];
  /** Delivered tasks holding a concurrency slot: running attempts plus zombies. */
  private inFlight = 0;
  /** Handlers still running after their attempt ended (timeout, lost lease, stray error): they keep their slot. */
  private zombies = 0;
  private stopping = false;
  private abandoning = false;
  private inXread = false;
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private readonly stopSignal = new AbortController();
  private readonly unsubscribe: (() => void) | undefined;

  constructor(settings: RunnerSettings, host: RunnerHost) {
    this.settings = settings;
    this.host = host;
    this.link = new RedisLink(settings.redisUrl, { ...settings.linkOptions, name: `baton-worker-${settings.type}` });
    this.streamKey = keyOf('stream', settings.storageNs, settings.type);
    this.unsubscribe = settings.shared?.subscribe(() => this.notify());
  }

  /** Free slots of this runner: its own concurrency, and the limit it shares, if any. */
  private freeSlots(): number {
    const own = this.settings.concurrency - this.inFlight;
    return this.settings.shared === undefined ? own : Math.min(own, this.settings.shared.free);
  }

  /** A delivered task gave its slot back. */
  private freeSlot(): void {
    this.inFlight--;
    this.settings.shared?.release(1);
  }

  /** Connects (checking the library version) and starts the fetch loop. */
  async start(): Promise<void> {
    await this.link.ready();
    this.loop = this.fetchLoop();
  }

  /** Attempts running now. */
  get runningCount(): number {
    return this.running.size;
  }

  /** Handlers that ignored their AbortSignal and still run after their attempt ended. */
  get zombieCount(): number {
    return this.zombies;
  }

  // ---- shutdown, in this order (Worker.stop) ----

  /** 1. Stop fetching; finished tasks are still acked. */
  beginStop(): void {
    this.stopping = true;
    this.notify();
    if (this.inXread && this.inFlight === 0) this.link.dropConnection();
  }

  /** 2. True once no attempt is running and every outcome was sent (zombies have nothing left to send). */
  get drained(): boolean {
    return this.inFlight - this.zombies === 0 && this.completions.length === 0;
  }

  /** 3. Aborts every running attempt and leaves it to its lease; the loop sends what finished and exits. */
  abandon(): void {
    this.stopping = true;
    this.abandoning = true;
    for (const r of [...this.running]) {
      r.abandoned = true;
      r.ac.abort(new Error('worker shutting down: attempt abandoned to its lease'));
      this.complete(r, null);
    }
    this.stopSignal.abort();
    this.notify();
    if (this.inXread) this.link.dropConnection();
  }

  /** 4. Resolves when the fetch loop has exited; then closes the connection. */
  async join(): Promise<void> {
    await this.loop;
    this.unsubscribe?.();
    await this.link.close();
  }

  // ---- lease keeping (LeaseKeeper) ----

  /** The tasks to heartbeat: running, not past their deadline, lease not lost, not abandoned. */
  heartbeatItems(): AckItem[] {
    const out: AckItem[] = [];
    for (const r of this.running) if (r.heartbeating && !r.done) out.push({ id: r.task.taskId, sid: r.task.streamId });
    return out;
  }

  /** baton_v2_extend answered `held` (the SIDs still held) for `sent`: the others were taken back. */
  onExtendReply(sent: readonly AckItem[], held: readonly string[]): void {
    const still = new Set(held);
    for (const item of sent) {
      if (still.has(String(item.sid))) continue;
      for (const r of this.running) {
        if (r.task.streamId === item.sid && r.heartbeating) {
          // Another worker may run it now: stop. Its outcome is still sent (Redis says stale).
          r.heartbeating = false;
          this.host.counters.leaseLost++;
          this.host.warn(`lease lost for ${this.settings.ns}/${this.settings.type} task ${r.task.taskId}: aborting the attempt`);
          r.ac.abort(new Error('lease lost: the task was taken back'));
        }
      }
    }
  }

  // ---- attempts ----

  /** A failure escaped attempt `r`'s promise (process_guard). */
  strayError(r: Running, e: unknown, how: string): void {
    this.host.counters.strayErrors++;
    if (r.done) {
      // Too late to fail the task, and it is still the handler's code (or a resource it created):
      // reported, never a crash. The application may act on the event.
      this.host.warn(`${how} from ${this.settings.ns}/${this.settings.type} task ${r.task.taskId} after its attempt ended: ` +
        `${e instanceof Error ? e.message : String(e)}`);
      this.host.strayAfterEnd({ namespace: this.settings.ns, taskType: this.settings.type, taskId: r.task.taskId, how, error: e });
      return;
    }
    r.ac.abort(e);
    this.complete(r, outcomeOfError(e, how));
  }

  private notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /** Records the end of attempt `r` (outcome null: abandoned, nothing to send). */
  private complete(r: Running, outcome: Outcome | null): void {
    if (r.done) return;
    r.done = true;
    if (r.timer) clearTimeout(r.timer);
    this.running.delete(r);
    if (r.settled) {
      this.freeSlot();
    } else if (!r.abandoned) {
      // The handler ignores its AbortSignal. It keeps its concurrency slot until it settles, so
      // retries of stuck handlers cannot pile up beyond the type's concurrency.
      this.zombies++;
      this.host.warn(`${this.settings.ns}/${this.settings.type} task ${r.task.taskId}: the handler is still running after its attempt ` +
        `ended (${outcome?.message ?? 'abandoned'}); it keeps its concurrency slot until it returns: make it honour context.signal`);
    }
    try {
      r.span?.end(outcome?.kind ? new Error(outcome.message) : undefined);
    } catch (e) {
      this.host.warn(`tracing: ${(e as Error).message}`);
    }
    if (outcome !== null && !r.abandoned) this.completions.push({ id: r.task.taskId, sid: r.task.streamId, outcome });
    this.notify();
  }

  private dispatch(entries: readonly Buffer[]): number {
    const n = Math.floor(entries.length / ENTRY_VALUES);
    this.inFlight += n;
    for (let i = 0; i < n; i++) {
      let task: Task;
      try {
        task = decodeEntry(this.settings.ns, this.settings.type, entries, i, this.settings.payloadParse);
      } catch (e) {
        // Not a valid task (e.g. the payload is not a JSON object): dead-letter it as malformed,
        // never crash and never drop it.
        const m = e as MalformedEntry;
        this.host.counters.malformed++;
        this.freeSlot();
        this.completions.push({ id: m.taskId, sid: m.streamId, outcome: { kind: 'malformed', message: m.reason.message, stack: '' } });
        continue;
      }
      this.runAttempt(task);
    }
    return n;
  }

  private runAttempt(task: Task): void {
    const s = this.settings;
    const r = new Running(this, task, s.ns, s.type);
    this.running.add(r);
    try {
      let deadline: number | undefined;
      if (task.executionTimeout !== undefined) {
        const ms = task.executionTimeout * 1000;
        deadline = Date.now() + ms;
        r.timer = setTimeout(() => this.onDeadline(r), ms);
      }
      const context: TaskContext = { signal: r.ac.signal, attempt: task.attempt, deadline, consumer: s.consumer };
      try {
        r.span = this.host.startSpan(task);
      } catch (e) {
        this.host.warn(`tracing: ${(e as Error).message}`);
      }
      const call = () => s.handler(task, context);
      const onSync = (ms: number) => this.host.handlerSync(s.ns, s.type, task.taskId, ms);
      const attempt = r.span ? r.span.run(() => runInBoundary(r, call, onSync)) : runInBoundary(r, call, onSync);
      void attempt.then((outcome) => this.handlerSettled(r, outcome));
    } catch (e) {
      // A failure of the worker itself around the handler: fail this attempt, keep the loop.
      r.settled = true;
      this.complete(r, outcomeOfError(e, 'baton worker'));
    }
  }

  private handlerSettled(r: Running, outcome: Outcome): void {
    r.settled = true;
    if (!r.done) {
      this.complete(r, outcome);
      return;
    }
    // A zombie (or an abandoned attempt) finally returned: its slot is free again.
    this.freeSlot();
    if (!r.abandoned) this.zombies--;
    this.notify();
  }

  private onDeadline(r: Running): void {
    if (r.done) return;
    // Past execution_timeout: abort the handler's signal, stop heartbeating (if the handler ignores
    // the signal, nobody extends the lease) and record the attempt as failed now, kind timeout.
    r.heartbeating = false;
    this.host.counters.timedOut++;
    const outcome = timeoutOutcome(r.task.executionTimeout ?? 0);
    const err = new Error(outcome.message);
    err.name = 'TimeoutError';
    r.ac.abort(err);
    this.complete(r, outcome);
  }

  // ---- the fetch loop ----

  private waitForWork(): Promise<void> | undefined {
    const ready = this.completions.length > 0 || this.abandoning ||
      (this.stopping ? this.inFlight - this.zombies === 0 : this.freeSlots() > 0);
    if (ready) return undefined;
    return new Promise((resolve) => {
      this.wake = resolve;
    });
  }

  private async fetchLoop(): Promise<void> {
    // The loop must outlive any bug of its own: a failed pass is reported and retried.
    for (;;) {
      try {
        await this.fetchPasses();
        return;
      } catch (e) {
        this.host.warn(`${this.settings.storageNs}/${this.settings.type} fetch loop: ${(e as Error)?.stack ?? String(e)}`);
        await sleep(1000, this.stopSignal.signal);
      }
    }
  }

  private async fetchPasses(): Promise<void> {
    const s = this.settings;
    const backoff = new Backoff();
    let lastId = '';
    for (;;) {
      let wait: Promise<void> | undefined;
      while ((wait = this.waitForWork()) !== undefined) await wait;
      if (this.completions.length === 0 && this.stopping) break; // drained, or abandoned
      let redis: RedisHandle;
      try {
        redis = await this.link.ready(5000);
      } catch (e) {
        if (this.abandoning) break;
        this.host.warn(`${s.storageNs}/${s.type}: ${(e as Error).message}`);
        await sleep(backoff.next(), this.stopSignal.signal);
        continue;
      }
      const batch = this.completions;
      this.completions = [];
      const count = this.stopping ? 0 : Math.max(0, Math.min(this.freeSlots(), s.fetchBatch));
      // Slots asked for and not (yet) filled by delivered tasks go back to the shared limit.
      s.shared?.reserve(count);
      let reserved = count;
      try {
        const calls = this.outcomeCalls(batch);
        const pipeline = redis.pipeline();
        for (const c of calls) {
          const [cmd, args] = commandOf(c.call);
          pipeline.callBuffer(cmd, ...args);
        }
        if (count > 0) {
          const [cmd, args] = commandOf(dequeueCall(s.storageNs, s.type, { group: s.group, consumer: s.consumer, count, leaseMs: s.leaseMs }));
          pipeline.callBuffer(cmd, ...args);
        }
        let replies: [Error | null, unknown][];
        try {
          replies = (await pipeline.exec()) ?? [];
        } catch (e) {
          replies = [];
          this.host.warn(`${s.storageNs}/${s.type}: ${(e as Error).message}`);
        }
        const resend = this.handleOutcomeReplies(calls, replies);
        if (resend.length > 0) {
          // Sent again after the reconnect: an ack or fail that did run returns gone / stale.
          this.completions = resend.concat(this.completions);
          if (this.abandoning) break; // what is left is left to the leases
          s.shared?.release(reserved);
          reserved = 0;
          await sleep(backoff.next(), this.stopSignal.signal);
          continue;
        }
        if (count === 0) {
          backoff.reset();
          continue;
        }
        const [err, dequeued] = replies[calls.length] ?? [new Error('no reply'), null];
        if (err !== null || !Array.isArray(dequeued) || dequeued.length < 3) {
          // E.g. the functions library was unloaded, or the connection broke: wait, do not spin.
          // Tasks it may have leased to us come back when their lease ends.
          this.host.warn(`${s.storageNs}/${s.type} baton_v2_dequeue: ${err ? fromRedisError(err).message : 'unexpected reply'}`);
          s.shared?.release(reserved);
          reserved = 0;
          await sleep(backoff.next(), this.stopSignal.signal);
          continue;
        }
        backoff.reset();
        lastId = String(dequeued[1]);
        const delivered = this.dispatch(dequeued[0] as Buffer[]);
        reserved -= delivered;
        s.shared?.release(reserved);
        reserved = 0;
        if (delivered === 0 && lastId !== '') await this.blockForNewEntries(redis, lastId);
      } finally {
        s.shared?.release(reserved);
      }
    }
  }

  /** baton_v2_ack calls (up to 256 tasks each) then one baton_v2_fail per failure. */
  private outcomeCalls(batch: readonly Completion[]): { call: FunctionCall; completions: Completion[] }[] {
    const s = this.settings;
    const calls: { call: FunctionCall; completions: Completion[] }[] = [];
    const acks = batch.filter((c) => c.outcome.kind === null);
    for (let i = 0; i < acks.length; i += ACKS_PER_CALL) {
      const part = acks.slice(i, i + ACKS_PER_CALL);
      calls.push({ call: ackCall(s.storageNs, s.type, { group: s.group, consumer: s.consumer }, part.map((c) => ({ id: c.id, sid: c.sid }))), completions: part });
    }
    for (const c of batch) {
      if (c.outcome.kind === null) continue;
      calls.push({
        call: failCall(s.storageNs, s.type, {
          group: s.group, consumer: s.consumer, id: c.id, sid: c.sid, kind: c.outcome.kind, error: c.outcome.message,
          stack: c.outcome.stack, baseMs: s.retry.baseMs, maxMs: s.retry.maxMs, jitter: String(Math.floor(Math.random() * 1e6) / 1e6),
        }),
        completions: [c],
      });
    }
    return calls;
  }

  /** Counts the outcomes Redis confirmed; returns the completions to send again (connection lost). */
  private handleOutcomeReplies(calls: readonly { call: FunctionCall; completions: Completion[] }[],
    replies: readonly [Error | null, unknown][]): Completion[] {
    const s = this.settings;
    const resend: Completion[] = [];
    calls.forEach((c, i) => {
      const [err, reply] = replies[i] ?? [new Error('no reply'), null];
      if (err !== null) {
        const e = fromRedisError(err, c.call.fn);
        // Retryable (unavailable, resource_exhausted: an OOM refusal) or the library is being
        // reloaded: send again, or a success would run twice and a failure's record be lost.
        if (e.retryable || e.code === 'version_mismatch') {
          resend.push(...c.completions);
          if (e.code !== 'unavailable') this.host.warn(`${s.storageNs}/${s.type}: ${e.message} (sent again after a pause)`);
        } else {
          this.host.warn(`${s.storageNs}/${s.type}: ${e.message}`);
        }
        return;
      }
      if (c.call.fn.endsWith('_ack')) {
        for (const status of reply as Buffer[]) {
          const v = status.toString();
          if (v === 'done' || v === 'stale_done') this.host.counters.succeeded++;
        }
        return;
      }
      // ['retry', due_ms, attempt], ['dead', at_ms, attempt] or ['stale', '', 0].
      const r = reply as [Buffer, Buffer | number, number];
      const verdict = r[0].toString();
      const done = c.completions[0] as Completion;
      if (verdict === 'retry' || verdict === 'dead') this.host.counters.failed++;
      if (verdict === 'dead') this.host.counters.dead++;
      if (verdict === 'retry') this.host.retryScheduled(s.storageNs, s.type, Number(r[1]));
      this.host.attemptFailed({
        namespace: s.ns, taskType: s.type, taskId: done.id, kind: done.outcome.kind as FailureKind,
        message: done.outcome.message, verdict,
      });
    });
    return resend;
  }

  private async blockForNewEntries(redis: RedisHandle, lastId: string): Promise<void> {
    if (this.completions.length > 0 || this.stopping) return;
    const block = this.inFlight > 0 ? Math.min(this.settings.blockMs, BUSY_BLOCK_MS) : this.settings.blockMs;
    this.inXread = true;
    try {
      // COUNT 1: only a wake-up; baton_v2_dequeue reads the entries (and their payloads) itself.
      await redis.callBuffer('XREAD', 'COUNT', 1, 'BLOCK', block, 'STREAMS', this.streamKey, lastId);
    } catch {
      // A broken connection (or our own drop at shutdown): the loop reconnects or exits.
    } finally {
      this.inXread = false;
    }
  }
}

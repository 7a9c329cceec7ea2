// The worker: register async handlers per (namespace, task type), then start(). Wires one
// TypeRunner per registered type and partition (its own connection and fetch loop), the LeaseKeeper
// (heartbeats every lease/3), the execution_timeout timers, the error boundary and process guard,
// the event-loop lag monitor, optional worker-thread pools and, opt-in, the maintenance loop
// (promote and reclaim). See docs/protocol.md "Worker loop". A type of a partitioned namespace
// gets one TypeRunner per partition, and partitions added while running are served within
// refresh_seconds (docs/cluster.md, "Partitions").
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { BatonError, invalidArgument } from './baton_error.js';
import { configure as configureCall } from './generated/calls.js';
import { GLOBAL_KEYS } from './generated/protocol.js';
import { parseSettings } from './client.js';
import { defaultRedisUrl, RedisLink, type LinkOptions } from './redis_link.js';
import { isClusterUrl, parseClusterUrl } from './cluster_url.js';
import { DEFAULT_RETRY, type RetryPolicy } from './backoff.js';
import { acquireProcessGuard } from './process_guard.js';
import { LagMonitor, type BlockReport, type LagOptions } from './lag_monitor.js';
import { LeaseKeeper } from './lease_keeper.js';
import { Maintenance } from './maintenance.js';
import { ThreadPool } from './thread_pool.js';
import { consoleLogger, silentLogger, type Logger } from './logger.js';
import { checkName } from './task_rules.js';
import type { PayloadParse, Task } from './task.js';
import { loadOtel, startAttemptSpan, type AttemptSpan } from './tracing.js';
import { TypeRunner, type Counters, type FailedAttempt, type Handler, type RunnerHost, type RunnerSettings, type StrayError } from './type_runner.js';
import { PARTITION_REFRESH_MS, PartitionCounts, storageNamespace } from './partitions.js';
import { SharedSlots } from './shared_slots.js';

export type { Handler, TaskContext, FailedAttempt, StrayError } from './type_runner.js';

export interface TypeOptions {
  /** Attempts of this type run at once (default WorkerOptions.defaultConcurrency). */
  concurrency?: number;
  /** Retry backoff of this type's failed attempts (default base 2000 ms, max 600000 ms). */
  retry?: Partial<RetryPolicy>;
  /**
   * Lease of every task of this type this worker takes, ms (1000..86400000), extended every
   * lease/3 while the handler runs; 0 (default) = the namespace's lease_ms setting.
   */
  leaseMs?: number;
}

export interface ThreadedTypeOptions extends Omit<TypeOptions, 'concurrency'> {
  /** Worker threads for this type = attempts at once (default 1). */
  threads?: number;
  /** A thread still busy this long after its attempt was aborted is terminated (default 1000 ms). */
  terminateAfterMs?: number;
}

export interface WorkerOptions extends Omit<LinkOptions, 'name'> {
  /**
   * "redis://[user:password@]host:port[/db]", or a Redis Cluster's seed nodes
   * "redis+cluster://[user:password@]host:port[,host:port...]"; default BATON_REDIS_URL or
   * redis://127.0.0.1:6379. A bad cluster URL throws invalid_argument (redis_url) here.
   */
  redis?: string;
  /** Consumer group shared by every worker of a type (default "baton"). */
  group?: string;
  /** First part of the consumer name "<service>:<host>:<pid>:<random>:node" (default "worker"). */
  service?: string;
  defaultConcurrency?: number;
  /** Most entries per dequeue call, 1..1000 (default 64). */
  fetchBatch?: number;
  /** XREAD BLOCK of an idle type, ms (default 5000): an idle type costs Redis two commands per block. */
  blockMs?: number;
  /** stop(): how long running attempts get to finish before they are left to their lease (default 10000). */
  shutdownGraceMs?: number;
  /** Also promote due delayed/retrying tasks and reclaim expired leases of these types (default false: batond does it). */
  maintenance?: boolean;
  /** run() stops gracefully on SIGTERM/SIGINT (default false: the application owns its signals). */
  handleSignals?: boolean;
  /** How Task.payload is parsed (default "json"; "lossless" keeps numbers beyond 2^53). */
  payloadParse?: PayloadParse;
  /** Fail the attempt a stray rejection or exception belongs to instead of crashing (default true). */
  captureUnhandled?: boolean;
  /** Event-loop lag monitor settings, or false to turn it off. */
  eventLoop?: LagOptions | false;
  /** Where warnings go (default: console); false drops them. */
  logger?: Logger | false;
  /** OpenTelemetry consumer spans when @opentelemetry/api is present (default true). */
  tracing?: boolean;
}

export interface TypeStats {
  readonly namespace: string;
  readonly taskType: string;
  readonly running: number;
  /** Handlers still running after their attempt ended (they ignored the AbortSignal): each holds a concurrency slot. */
  readonly zombies: number;
  /** Times a handler of this type blocked the event loop past the threshold (or was running when it was). */
  readonly blockedCount: number;
  readonly maxBlockedMs: number;
}

export interface WorkerStats extends Readonly<Counters> {
  readonly eventLoop: { readonly maxLagMs: number; readonly blockedCount: number };
  readonly types: readonly TypeStats[];
}

interface Registration {
  ns: string;
  type: string;
  handler: Handler<never>;
  options: TypeOptions;
  pool?: ThreadPool;
  /** Set by start(): the settings of every partition's runner but the storage namespace. */
  settings?: Omit<RunnerSettings, 'storageNs'>;
  /** The runners of partitions 0, 1, ... (docs/cluster.md, "Partitions"). */
  runners?: TypeRunner[];
}

function makeConsumerName(service: string): string {
  return `${service}:${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}:node`;
}

function intOption(field: string, value: number | undefined, min: number, max: number, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < min || v > max) throw invalidArgument(field, `must be an integer ${min}..${max} (got ${String(v)})`);
  return v;
}

function retryPolicy(retry: Partial<RetryPolicy> | undefined): RetryPolicy {
  const baseMs = intOption('retry.baseMs', retry?.baseMs, 1, 2 ** 31, DEFAULT_RETRY.baseMs);
  const maxMs = intOption('retry.maxMs', retry?.maxMs, baseMs, 2 ** 31, Math.max(DEFAULT_RETRY.maxMs, baseMs));
  return { baseMs, maxMs };
}

/**
 * Events: "failed" (FailedAttempt, after Redis recorded a failed attempt), "blocked"
 * (BlockReport, a handler blocked the event loop), "strayError" (StrayError, a rejection or
 * exception from code a handler started, after its attempt ended: too late to fail the task),
 * "warning" (message). Never "error": a worker does not throw at its owner; connection trouble
 * is retried and reported as warnings.
 */
export class Worker extends EventEmitter {
  readonly consumerName: string;
  private readonly options: WorkerOptions;
  private readonly url: string;
  private readonly logger: Logger;
  private readonly registrations: Registration[] = [];
  private readonly counters: Counters = { succeeded: 0, failed: 0, dead: 0, malformed: 0, timedOut: 0, leaseLost: 0, strayErrors: 0 };
  private readonly blocked = new Map<string, { count: number; maxMs: number }>();
  private runners: TypeRunner[] = [];
  private control: RedisLink | undefined;
  private host: RunnerHost | undefined;
  private partitionCounts: PartitionCounts | undefined;
  /** Reads the partition counts again every refresh_seconds and serves new partitions. */
  private partitionTimer: NodeJS.Timeout | undefined;
  private growing: Promise<void> | undefined;
  private leaseKeeper: LeaseKeeper | undefined;
  private maintenance: Maintenance | undefined;
  private lagMonitor: LagMonitor | undefined;
  private releaseGuard: (() => void) | undefined;
  private otel: Awaited<ReturnType<typeof loadOtel>> = null;
  private state: 'new' | 'starting' | 'running' | 'stopping' | 'stopped' = 'new';
  private stopped: Promise<void> | undefined;
  private resolveStopped: (() => void) | undefined;
  private readonly finished = new Promise<void>((resolve) => {
    this.resolveStopped = resolve;
  });

  constructor(options: WorkerOptions = {}) {
    super();
    this.options = options;
    this.url = options.redis ?? defaultRedisUrl();
    if (isClusterUrl(this.url)) parseClusterUrl(this.url);
    this.logger = options.logger === false ? silentLogger : (options.logger ?? consoleLogger);
    this.consumerName = makeConsumerName(options.service ?? 'worker');
  }

  /**
   * Registers an async handler for (namespace, taskType). Throws invalid_argument (bad name or
   * option), already_exists (registered twice) or conflict (after start).
   */
  register<P = unknown>(namespace: string, taskType: string, handler: Handler<P>, options: TypeOptions = {}): this {
    if (typeof handler !== 'function') throw invalidArgument('handler', 'must be a function');
    this.add({ ns: namespace, type: taskType, handler: handler as Handler<never>, options });
    return this;
  }

  /**
   * Registers a CPU-bound task type whose handler runs in worker threads: `module` (a file URL or
   * path) exports the handler as default; it receives a ThreadTask and { signal, attempt }.
   */
  registerThreaded(namespace: string, taskType: string, module: string | URL, options: ThreadedTypeOptions = {}): this {
    const threads = intOption('threads', options.threads, 1, 256, 1);
    const terminateAfterMs = intOption('terminateAfterMs', options.terminateAfterMs, 0, 600000, 1000);
    const pool = new ThreadPool(module, threads, terminateAfterMs, (m) => this.warn(m));
    const handler: Handler = (task, context) => pool.run(task, context.signal);
    this.add({ ns: namespace, type: taskType, handler: handler as Handler<never>, options: { ...options, concurrency: threads }, pool });
    return this;
  }

  private add(r: Registration): void {
    if (this.state !== 'new') throw new BatonError('conflict', 'register: the worker has already started');
    checkName('namespace', r.ns);
    checkName('task_type', r.type);
    intOption('concurrency', r.options.concurrency, 1, 10000, 1);
    retryPolicy(r.options.retry);
    const lease = r.options.leaseMs ?? 0;
    if (lease !== 0) intOption('leaseMs', lease, 1000, 86400000, 0);
    if (this.registrations.some((x) => x.ns === r.ns && x.type === r.type)) {
      throw new BatonError('already_exists', `register: ${r.ns}/${r.type} is already registered`);
    }
    this.registrations.push(r);
  }

  /**
   * Connects, checks the functions library version, reads the namespaces' lease_ms for types
   * without their own, starts everything and returns. Throws version_mismatch, unavailable,
   * invalid_argument (options, or no handler registered) or conflict (started twice). Once
   * started, connections come back by themselves after a Redis restart.
   */
  async start(): Promise<void> {
    if (this.state !== 'new') throw new BatonError('conflict', 'start: the worker has already started');
    const o = this.options;
    if (this.registrations.length === 0) throw invalidArgument('handlers', 'register at least one handler before start');
    const defaultConcurrency = intOption('defaultConcurrency', o.defaultConcurrency, 1, 10000, 4);
    const fetchBatch = intOption('fetchBatch', o.fetchBatch, 1, 1000, 64);
    const blockMs = intOption('blockMs', o.blockMs, 1, 3600000, 5000);
    intOption('shutdownGraceMs', o.shutdownGraceMs, 0, 86400000, 10000);
    const group = o.group ?? 'baton';
    if (group === '') throw invalidArgument('group', 'must not be empty');
    this.state = 'starting';
    const linkOptions: LinkOptions = { ...(o.redisOptions ? { redisOptions: o.redisOptions } : {}), ...(o.connectTimeoutMs ? { connectTimeoutMs: o.connectTimeoutMs } : {}) };
    this.control = new RedisLink(this.url, { ...linkOptions, name: 'baton-worker-control' });
    try {
      const redis = await this.control.ready();
      // A convenience for the CLI (batond finds namespaces with work without it).
      await redis.sadd(GLOBAL_KEYS.namespaces, ...new Set(this.registrations.map((r) => r.ns)));
      const leases = new Map<string, number>();
      for (const ns of new Set(this.registrations.filter((r) => !r.options.leaseMs).map((r) => r.ns))) {
        leases.set(ns, parseSettings(await this.control.fcall(configureCall(ns, []), 'lease_ms')).lease_ms);
      }
      if (o.tracing !== false) this.otel = await loadOtel();
      const host = (this.host = this.runnerHost());
      // Each type is served in every partition of its namespace: one runner (fetch loop) per
      // partition, each with the type's concurrency; a threaded type's partitions share its threads.
      this.partitionCounts = new PartitionCounts((m) => this.warn(m));
      await this.partitionCounts.refresh(redis, this.registrations.map((r) => r.ns));
      for (const r of this.registrations) {
        const concurrency = r.options.concurrency ?? defaultConcurrency;
        r.settings = {
          ns: r.ns, type: r.type, handler: r.handler as Handler, concurrency,
          retry: retryPolicy(r.options.retry), leaseMs: r.options.leaseMs || (leases.get(r.ns) as number), group,
          consumer: this.consumerName, fetchBatch, blockMs, payloadParse: o.payloadParse ?? 'json', redisUrl: this.url, linkOptions,
          shared: r.pool === undefined ? undefined : new SharedSlots(concurrency),
        };
        const settings = r.settings;
        r.runners = Array.from({ length: this.partitionCounts.count(r.ns) },
          (_, p) => new TypeRunner({ ...settings, storageNs: storageNamespace(r.ns, p) }, host));
      }
      this.runners = this.registrations.flatMap((r) => r.runners ?? []);
      await Promise.all(this.registrations.map(async (r) => {
        try {
          await r.pool?.start();
        } catch (e) {
          throw invalidArgument('module', `registerThreaded ${r.ns}/${r.type}: ${(e as Error).message}`);
        }
      }));
      if (o.captureUnhandled !== false) this.releaseGuard = acquireProcessGuard();
      if (o.eventLoop !== false) {
        this.lagMonitor = new LagMonitor(o.eventLoop ?? {}, () => this.runningTypes(), (r) => this.onBlocked(r));
        this.lagMonitor.start();
      }
      await Promise.all(this.runners.map((r) => r.start()));
      this.leaseKeeper = new LeaseKeeper(this.control, this.runners, (m) => this.warn(m));
      this.leaseKeeper.start();
      if (o.maintenance) {
        this.maintenance = new Maintenance(this.control, this.runners.map((x) => ({ ns: x.settings.storageNs, type: x.settings.type, retry: x.settings.retry })),
          this.consumerName, (m) => this.warn(m));
        this.maintenance.start();
      }
    } catch (e) {
      await this.shutdown(0);
      throw e;
    }
    this.state = 'running';
    this.partitionTimer = setInterval(() => void this.servePartitions(), PARTITION_REFRESH_MS);
    this.partitionTimer.unref();
  }

  /**
   * Reads the partition counts of the registered namespaces and starts serving the partitions
   * added since (P only grows: a smaller count is ignored). A partition whose runner cannot
   * start (Redis down) is tried again on the next round. Never rejects (shutdown awaits it).
   */
  private servePartitions(): Promise<void> {
    if (this.state !== 'running' || this.growing !== undefined) return this.growing ?? Promise.resolve();
    this.growing = this.growPartitions().catch((e: unknown) => {
      this.warn(`partition watch: ${(e as Error)?.stack ?? String(e)}`);
    }).finally(() => {
      this.growing = undefined;
    });
    return this.growing;
  }

  private async growPartitions(): Promise<void> {
    const counts = this.partitionCounts as PartitionCounts;
    try {
      const redis = await (this.control as RedisLink).ready();
      await counts.refresh(redis, this.registrations.map((r) => r.ns), Date.now(), 0);
    } catch (e) {
      this.warn(`partition counts: ${(e as Error).message}`);
      return;
    }
    for (const r of this.registrations) {
      const runners = r.runners as TypeRunner[];
      const settings = r.settings as Omit<RunnerSettings, 'storageNs'>;
      while (runners.length < counts.count(r.ns) && this.state === 'running') {
        const runner = new TypeRunner({ ...settings, storageNs: storageNamespace(r.ns, runners.length) }, this.host as RunnerHost);
        try {
          await runner.start();
        } catch (e) {
          this.warn(`${runner.settings.storageNs}/${r.type}: cannot serve the partition yet: ${(e as Error).message}`);
          await runner.join();
          break;
        }
        // Registered even when stop() began while it connected (the loop then ends): its fetch
        // loop may already hold tasks, which need heartbeats, the grace and abandon() like the
        // others. shutdown() waits for this round before stopping this.runners.
        runners.push(runner);
        this.runners.push(runner);
        this.leaseKeeper?.add(runner);
        this.maintenance?.add({ ns: runner.settings.storageNs, type: r.type, retry: settings.retry });
      }
    }
  }

  /** start(), then resolves once the worker has stopped (stop(), or a signal with handleSignals). */
  async run(): Promise<void> {
    if (this.stopped !== undefined) return this.stopped; // stop() came first
    const onSignal = () => void this.stop();
    if (this.options.handleSignals) {
      process.on('SIGTERM', onSignal);
      process.on('SIGINT', onSignal);
    }
    try {
      await this.start();
      await this.finished;
    } finally {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
    }
  }

  /**
   * Graceful: stop fetching, let running attempts finish within the grace (their outcomes are
   * sent), then abort the rest and leave them to their lease (another worker takes them over).
   * Idempotent; resolves once everything is closed.
   */
  stop(options: { graceMs?: number } = {}): Promise<void> {
    if (this.stopped === undefined) {
      const grace = options.graceMs ?? this.options.shutdownGraceMs ?? 10000;
      this.stopped = (async () => {
        // A start() in progress finishes (or fails) first.
        while (this.state === 'starting') await new Promise((r) => setTimeout(r, 10));
        if (this.state === 'running') await this.shutdown(grace);
        this.state = 'stopped';
        this.resolveStopped?.();
      })();
    }
    return this.stopped;
  }

  private async shutdown(graceMs: number): Promise<void> {
    this.state = 'stopping';
    clearInterval(this.partitionTimer);
    const until = Date.now() + graceMs;
    for (const r of this.runners) r.beginStop();
    // A round serving new partitions ends first; the runners it started are in this.runners then.
    await this.growing;
    for (const r of this.runners) r.beginStop();
    while (Date.now() < until && !this.runners.every((r) => r.drained)) await new Promise((r) => setTimeout(r, 10));
    for (const r of this.runners) if (!r.drained) r.abandon();
    await Promise.all(this.runners.map((r) => r.join()));
    this.leaseKeeper?.stop();
    await this.maintenance?.stop();
    this.lagMonitor?.stop();
    await Promise.all(this.registrations.map((r) => r.pool?.close()));
    this.releaseGuard?.();
    await this.control?.close();
  }

  /** Counters since start() (counted when Redis confirmed the outcome), and lag figures. */
  stats(): WorkerStats {
    return {
      ...this.counters,
      eventLoop: { maxLagMs: this.lagMonitor?.maxLagMs ?? 0, blockedCount: this.lagMonitor?.blockedCount ?? 0 },
      types: this.registrations.map((r) => {
        const b = this.blocked.get(`${r.ns}/${r.type}`);
        const runners = r.runners ?? [];
        const running = runners.reduce((n, x) => n + x.runningCount, 0);
        const zombies = runners.reduce((n, x) => n + x.zombieCount, 0);
        return { namespace: r.ns, taskType: r.type, running, zombies, blockedCount: b?.count ?? 0, maxBlockedMs: b?.maxMs ?? 0 };
      }),
    };
  }

  private warn(message: string, details?: Record<string, unknown>): void {
    this.logger.warn(message, details);
    if (this.listenerCount('warning') > 0) this.emit('warning', message);
  }

  private runningTypes(): BlockReport['types'] {
    return this.registrations.map((r) => ({ namespace: r.ns, type: r.type, running: (r.runners ?? []).reduce((n, x) => n + x.runningCount, 0) }))
      .filter((t) => t.running > 0);
  }

  private onBlocked(report: BlockReport): void {
    for (const t of report.types) {
      const key = `${t.namespace}/${t.type}`;
      const b = this.blocked.get(key) ?? { count: 0, maxMs: 0 };
      b.count++;
      b.maxMs = Math.max(b.maxMs, report.blockedMs);
      this.blocked.set(key, b);
    }
    const ms = Math.round(report.blockedMs);
    const names = report.types.map((t) => `${t.namespace}/${t.type}`).join(', ');
    const message = report.source === 'handler'
      ? `handler of ${names} blocked the event loop for ${ms} ms (task ${report.taskId}): move CPU-bound work to registerThreaded or await between chunks`
      : `event loop blocked for ${ms} ms while running ${names || 'no task (not a handler)'}`;
    this.warn(message);
    if (this.listenerCount('blocked') > 0) this.emit('blocked', report);
  }

  private runnerHost(): RunnerHost {
    return {
      counters: this.counters,
      warn: (m, d) => this.warn(m, d),
      handlerSync: (ns, type, taskId, ms) => this.lagMonitor?.handlerSync(ns, type, taskId, ms),
      retryScheduled: (ns, type, dueMs) => this.maintenance?.retryScheduled(ns, type, dueMs),
      startSpan: (task: Task): AttemptSpan | undefined => startAttemptSpan(this.otel, `process ${task.namespace}/${task.taskType}`,
        task.trace, {
          'messaging.system': 'baton', 'messaging.operation.type': 'process', 'messaging.destination.name': `${task.namespace}/${task.taskType}`,
          'messaging.message.id': task.taskId, 'baton.attempt': task.attempt,
        }),
      attemptFailed: (info: FailedAttempt) => {
        if (this.listenerCount('failed') > 0) this.emit('failed', info);
      },
      strayAfterEnd: (info: StrayError) => {
        if (this.listenerCount('strayError') > 0) this.emit('strayError', info);
      },
    };
  }
}

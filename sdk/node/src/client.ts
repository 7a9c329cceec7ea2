// The producer: enqueue tasks (now, delayed, at a time, idempotent by id or unique key), one or
// many per round trip; cancel them; read and change namespace settings.
import { BatonError, fromRedisError, invalidArgument } from './baton_error.js';
import { cancel as cancelCall, configure as configureCall, enqueue as enqueueCall } from './generated/calls.js';
import { commandOf } from './function_call.js';
import { GLOBAL_KEYS, NAMESPACE_CONFIG, type NamespaceSetting } from './generated/protocol.js';
import { keyOf } from './keys.js';
import type { Cluster } from 'ioredis';
import { defaultRedisUrl, RedisLink, type LinkOptions, type RedisHandle } from './redis_link.js';
import { prepareDocument, prepareRequest, type EnqueueOptions, type PreparedTask, type TaskRequest } from './enqueue_request.js';
import { readEnqueueReply, type EnqueueResult } from './enqueue_reply.js';
import { checkName, checkTaskId } from './task_rules.js';
import type { TaskFields } from './task_document.js';
import { loadOtel, ProducerSpans } from './tracing.js';
import { PartitionCounts, partitionOf, storageNamespace } from './partitions.js';
import { consoleLogger, silentLogger, type Logger } from './logger.js';

/** Tasks per baton_v2_enqueue call (as the C++ client). */
const MAX_PER_CALL = 256;
/** Pipelines sent per namespace when a cluster answers MOVED / ASK (the slot map is read between). */
const MAX_REDIRECT_ROUNDS = 3;

/** WAIT replicas timeoutMs after every enqueue round trip (ClientOptions.waitReplicas). */
interface DurableWait {
  readonly replicas: number;
  readonly timeoutMs: number;
}

export interface ClientOptions extends Omit<LinkOptions, 'name'> {
  /**
   * "redis://[user:password@]host:port[/db]", or a Redis Cluster's seed nodes
   * "redis+cluster://[user:password@]host:port[,host:port...]"; default BATON_REDIS_URL or
   * redis://127.0.0.1:6379.
   */
  redis?: string;
  /**
   * Durable enqueue (default 0 = off): after each enqueue round trip, `WAIT waitReplicas
   * waitTimeoutMs` on the same primary. Fewer replicas acknowledging in time makes the enqueue
   * fail with unavailable ("written on the primary but acknowledged by only K of N replicas"):
   * the task was written and may still run, but is not known to survive a failover.
   */
  waitReplicas?: number;
  /** How long WAIT waits for the replicas, in ms (default 1000; only with waitReplicas > 0). */
  waitTimeoutMs?: number;
  /**
   * OpenTelemetry (needs @opentelemetry/api): a PRODUCER span per task enqueued without a trace,
   * carried as trace.traceparent (default true).
   */
  tracing?: boolean;
  /** Where warnings go (an unparsable partition count; default: console); false drops them. */
  logger?: Logger | false;
}

/** Namespace settings kept in Redis (baton_v2_configure), shared by every client and worker. */
export type NamespaceSettings = Record<NamespaceSetting, number>;

const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/**
 * A producer. One connection, shared safely by concurrent calls (ioredis pipelines them).
 * Every error is a BatonError: invalid_argument names the field and the rule, and nothing is
 * written then; unavailable when Redis cannot be reached (the next call reconnects and checks the
 * functions library version again); version_mismatch when the library is not the one needed.
 */
export class Client {
  private readonly link: RedisLink;
  private readonly tracing: boolean;
  private readonly knownNamespaces = new Set<string>();
  /** The link's connection count knownNamespaces was filled on (a new connection may be a new Redis). */
  private knownOn = 0;
  private otel: Awaited<ReturnType<typeof loadOtel>> = null;
  private readonly wait: DurableWait | undefined;
  /** Partition counts of the namespaces used (docs/cluster.md, "Partitions"), each up to 5 s old. */
  private readonly partitions: PartitionCounts;

  private constructor(link: RedisLink, tracing: boolean, wait: DurableWait | undefined, logger: Logger) {
    this.link = link;
    this.tracing = tracing;
    this.wait = wait;
    this.partitions = new PartitionCounts((m) => logger.warn(m));
  }

  /**
   * Connects and checks the functions library version (on a cluster: on every primary).
   * A bad URL or wait setting throws invalid_argument naming redis_url / waitReplicas / waitTimeoutMs.
   */
  static async connect(options: ClientOptions = {}): Promise<Client> {
    const wait = durableWait(options);
    const link = new RedisLink(options.redis ?? defaultRedisUrl(), { ...options, name: 'baton-client' });
    const logger = options.logger === false ? silentLogger : (options.logger ?? consoleLogger);
    const client = new Client(link, options.tracing !== false, wait, logger);
    try {
      await link.ready();
      if (client.tracing) client.otel = await loadOtel();
    } catch (e) {
      await link.close();
      throw e;
    }
    return client;
  }

  /**
   * Enqueues one task. `payload` is a JSON object (serialized with JSON.stringify; bigint and
   * LosslessNumber values exactly) or rawJson(text) for text sent byte for byte.
   * A duplicate id or a held unique key is a result, not an error.
   */
  async enqueue(namespace: string, taskType: string, payload: unknown, options: EnqueueOptions = {}): Promise<EnqueueResult> {
    const spans = this.producerSpans();
    return (await this.traced(spans, () => this.submit([prepareRequest({ namespace, taskType, payload, options }, nowSeconds(), this.traceFor(spans))])))[0] as EnqueueResult;
  }

  /**
   * Enqueues many tasks in one round trip (one call per 256 tasks of one namespace and type);
   * results in request order. Every request is checked first: one invalid request fails the
   * whole call ("requests[3]: max_retry: ...") and nothing is written. If Redis fails part-way,
   * it throws an EnqueueError with every request's task id (generated ones included) and the
   * results Redis confirmed; retrying with those ids is safe: tasks already written come back
   * as duplicates.
   */
  async enqueueMany(requests: readonly TaskRequest[]): Promise<EnqueueResult[]> {
    const createdAt = nowSeconds();
    const spans = this.producerSpans();
    return this.traced(spans, () => {
      const prepared = requests.map((r, i) => {
        try {
          return prepareRequest(r, createdAt, this.traceFor(spans));
        } catch (e) {
          throw e instanceof BatonError && requests.length > 1 ? e.withContext(`requests[${i}]`) : e;
        }
      });
      return this.submit(prepared);
    });
  }

  /** Enqueues a complete task document (e.g. parseTaskDocument's result) exactly as it is. */
  async enqueueDocument(task: TaskFields, options: Pick<EnqueueOptions, 'runAt' | 'uniqueKey' | 'uniqueTtlSeconds'> = {}): Promise<EnqueueResult> {
    return (await this.submit([prepareDocument(task, options)]))[0] as EnqueueResult;
  }

  /**
   * Cancels a task that has not started (queued, scheduled or waiting to retry). Throws
   * not_found when there is no such live task, conflict when it is running or dead. In a
   * partitioned namespace it looks in the id's partition first, then in the others (a task
   * enqueued before the partition count grew); the count is read now, not from the 5 s copy.
   */
  async cancel(namespace: string, taskId: string): Promise<void> {
    checkName('namespace', namespace);
    checkTaskId(taskId);
    const redis = await this.link.ready();
    let record: string | null = null;
    let storage = namespace;
    try {
      for (const candidate of await this.partitionsToSearch(redis, namespace, taskId)) {
        record = await redis.hget(keyOf('tasks', candidate), taskId);
        storage = candidate;
        if (record !== null) break;
      }
    } catch (e) {
      throw fromRedisError(e, 'cancel');
    }
    if (record === null) throw new BatonError('not_found', `cancel: no live task ${taskId} in namespace ${namespace}`);
    const type = record.split('|')[1];
    if (type === undefined || type === '') throw new BatonError('internal', `cancel: malformed task record '${record}'`);
    const reply = await this.link.fcall(cancelCall(storage, type, { id: taskId }), 'cancel');
    if (String(reply) !== 'cancelled') throw new BatonError('internal', `cancel: unexpected reply ${String(reply)}`);
  }

  /**
   * Changes settings of a namespace ("" = back to the default) and returns the effective
   * settings; with no changes it only reads them. Throws invalid_argument naming the setting.
   * A partitioned namespace gets the changes in every partition (the count is read now, not from
   * the 5 s copy); the result is partition 0's.
   */
  async configure(namespace: string, changes: Partial<Record<NamespaceSetting, number | ''>> = {}): Promise<NamespaceSettings> {
    checkName('namespace', namespace);
    const items = Object.entries(changes).map(([setting, value]) => {
      if (!(setting in NAMESPACE_CONFIG)) throw invalidArgument(setting, 'is not a setting');
      return { setting, value: value === '' ? '' : String(value) };
    });
    let count = 1;
    if (items.length > 0) {
      const redis = await this.link.ready();
      try {
        // Read now, not the 5 s copy: the change must reach a partition added a moment ago too.
        await this.partitions.readNow(redis, namespace);
      } catch (e) {
        throw fromRedisError(e, 'configure');
      }
      count = this.partitions.count(namespace);
    }
    const replies = await Promise.all(Array.from({ length: count },
      (_, p) => this.link.fcall(configureCall(storageNamespace(namespace, p), items), 'configure')));
    return parseSettings(replies[0]);
  }

  /** The storage namespaces of `ns` to look for `taskId` in: its partition first, then the others. */
  private async partitionsToSearch(redis: RedisHandle, ns: string, taskId: string): Promise<string[]> {
    // Read now, not the 5 s copy: a task enqueued to a partition added a moment ago must be found.
    await this.partitions.readNow(redis, ns);
    const count = this.partitions.count(ns);
    const first = partitionOf(taskId, count);
    const out = [storageNamespace(ns, first)];
    for (let p = 0; p < count; p++) if (p !== first) out.push(storageNamespace(ns, p));
    return out;
  }

  /** Closes the connection. */
  async close(): Promise<void> {
    await this.link.close();
  }

  private producerSpans(): ProducerSpans | undefined {
    return this.tracing && this.otel !== null ? new ProducerSpans(this.otel) : undefined;
  }

  private traceFor(spans: ProducerSpans | undefined) {
    return spans === undefined ? undefined : (ns: string, type: string, id: string) => spans.start(ns, type, id);
  }

  /** Runs the enqueue, then ends its producer spans (with the error, if it failed). */
  private async traced<T>(spans: ProducerSpans | undefined, fn: () => Promise<T>): Promise<T> {
    if (spans === undefined) return fn();
    try {
      const out = await fn();
      spans.end();
      return out;
    } catch (e) {
      spans.end(e);
      throw e;
    }
  }

  private async submit(tasks: readonly PreparedTask[]): Promise<EnqueueResult[]> {
    if (tasks.length === 0) return [];
    const redis = await this.link.ready();
    // baton:v2:namespaces is a plain directory for the CLI: one SADD per new namespace (again
    // after a reconnect: Redis may have restarted without its data).
    if (this.knownOn !== this.link.connections) {
      this.knownNamespaces.clear();
      this.knownOn = this.link.connections;
    }
    const fresh = [...new Set(tasks.map((t) => t.namespace))].filter((ns) => !this.knownNamespaces.has(ns));
    const taskIds = tasks.map((t) => t.taskId);
    const results = new Array<EnqueueResult | undefined>(tasks.length).fill(undefined);
    // Each task goes to its partition's storage namespace (keys and FCALL); its document keeps
    // the namespace. The directory (SADD) lists namespaces, never partitions.
    try {
      await this.partitions.refresh(redis, tasks.map((t) => t.namespace));
    } catch (e) {
      throw new EnqueueError(fromRedisError(e, 'enqueue'), taskIds, results);
    }
    const storage = tasks.map((t) => storageNamespace(t.namespace, partitionOf(t.taskId, this.partitions.count(t.namespace))));
    const calls = planCalls(tasks, storage);
    // A single Redis takes everything in one pipeline. A cluster takes one pipeline per storage
    // namespace (its keys share the {ns} slot, so one primary), and the untagged SADD on its own.
    const groups = this.link.isCluster ? byNamespace(calls, storage) : [calls];
    const saddWithFirst = fresh.length > 0 && !this.link.isCluster;
    const directory = fresh.length > 0 && this.link.isCluster
      ? redis.sadd(GLOBAL_KEYS.namespaces, ...fresh).then(() => true, () => false) : Promise.resolve(undefined);
    const outcomes = await Promise.all(groups.map((g, k) => this.sendGroup(redis, tasks, storage, g, results, k === 0 && saddWithFirst ? fresh : [])));
    const saddOk = (await directory) ?? outcomes[0]?.saddOk;
    if (saddOk === true) for (const ns of fresh) this.knownNamespaces.add(ns);
    const firstError = outcomes.find((o) => o.error !== undefined)?.error;
    if (firstError) throw new EnqueueError(firstError, taskIds, results);
    return results as EnqueueResult[];
  }

  /**
   * One pipeline (one node): [SADD], the enqueue calls, then WAIT when waitReplicas is set. Fills
   * `results` with what Redis confirmed. On a cluster, calls answered MOVED or ASK did not run:
   * they are sent again once the slot map is read again (ioredis does that by itself only for a
   * pipeline whose every command was redirected, which a WAIT at its end prevents).
   */
  private async sendGroup(redis: RedisHandle, tasks: readonly PreparedTask[], storage: readonly string[], calls: number[][],
    results: (EnqueueResult | undefined)[], sadd: readonly string[]): Promise<{ error?: BatonError; saddOk?: boolean }> {
    let saddOk: boolean | undefined;
    for (let round = 1; ; round++) {
      const pipeline = redis.pipeline();
      if (sadd.length > 0) pipeline.sadd(GLOBAL_KEYS.namespaces, ...sadd);
      for (const c of calls) {
        const items = c.map((i) => (tasks[i] as PreparedTask).item);
        const uniques = c.map((i) => (tasks[i] as PreparedTask).uniqueKey).filter((k): k is string => k !== undefined);
        const first = tasks[c[0] as number] as PreparedTask;
        const [cmd, args] = commandOf(enqueueCall(storage[c[0] as number] as string, first.taskType, items, uniques));
        pipeline.call(cmd, ...args);
      }
      if (this.wait !== undefined) pipeline.call('WAIT', this.wait.replicas, this.wait.timeoutMs);
      let replies: [Error | null, unknown][] | null;
      try {
        replies = await pipeline.exec();
      } catch (e) {
        return { error: fromRedisError(e, 'enqueue'), saddOk };
      }
      if (replies === null) return { error: new BatonError('unavailable', 'enqueue: pipeline aborted'), saddOk };
      let next = 0;
      if (sadd.length > 0) saddOk = replies[next++]?.[0] == null;
      const redirected: number[][] = [];
      let firstError: BatonError | undefined;
      let written = 0;
      for (const c of calls) {
        const [err, reply] = replies[next++] ?? [new Error('missing reply'), null];
        if (err) {
          if (this.link.isCluster && /^(MOVED|ASK) /.test(err.message)) redirected.push(c);
          else firstError ??= fromRedisError(err, 'enqueue');
          continue;
        }
        const ids = c.map((i) => (tasks[i] as PreparedTask).taskId);
        readEnqueueReply(reply, ids).forEach((r, k) => {
          results[c[k] as number] = r;
        });
        written += c.length;
      }
      if (firstError === undefined && written > 0 && this.wait !== undefined) firstError = this.waitError(replies[next], calls, written, tasks);
      if (firstError !== undefined || redirected.length === 0) return { ...(firstError ? { error: firstError } : {}), saddOk };
      if (round >= MAX_REDIRECT_ROUNDS) {
        return { error: new BatonError('unavailable', `enqueue: still redirected after ${round} tries (the cluster is moving slots): retry`), saddOk };
      }
      await new Promise<void>((resolve) => {
        (redis as Cluster).refreshSlotsCache(() => resolve());
      });
      calls = redirected;
      sadd = [];
    }
  }

  /** The unavailable error of a WAIT answered by fewer replicas than asked, else undefined. */
  private waitError(reply: [Error | null, unknown] | undefined, calls: number[][], written: number,
    tasks: readonly PreparedTask[]): BatonError | undefined {
    const wait = this.wait as DurableWait;
    const [err, acked] = reply ?? [new Error('missing reply'), null];
    const got = err ? `0 (${err.message})` : String(acked);
    if (!err && Number(acked) >= wait.replicas) return undefined;
    const first = tasks[(calls[0] as number[])[0] as number] as PreparedTask;
    return new BatonError('unavailable',
      `enqueue of ${written} task(s) of namespace ${first.namespace}: written on the primary but acknowledged by only ${got} of ${wait.replicas} replicas within ${wait.timeoutMs} ms (waitReplicas); it may still run, but is not known to survive a failover`);
  }
}

/**
 * The error of an enqueue call that Redis failed, wholly or part-way (e.g. a call of an
 * enqueueMany refused with OOM, or the connection lost). `code` and `field` are those of the
 * cause. `taskIds` are the ids of every request in request order, generated ones included;
 * `results` holds what Redis confirmed (undefined where unknown). Sending the same requests again
 * with these ids is safe: tasks already written come back as `duplicate`.
 */
export class EnqueueError extends BatonError {
  readonly taskIds: readonly string[];
  readonly results: readonly (EnqueueResult | undefined)[];

  constructor(cause: BatonError, taskIds: readonly string[], results: readonly (EnqueueResult | undefined)[]) {
    const written = results.filter((r) => r !== undefined).length;
    super(cause.code, `${cause.message} (${written} of ${taskIds.length} tasks confirmed; error.taskIds has the ids to retry with)`,
      { field: cause.field, hint: cause.hint, cause });
    this.taskIds = taskIds;
    this.results = results;
  }
}

function durableWait(options: ClientOptions): DurableWait | undefined {
  const replicas = options.waitReplicas ?? 0;
  if (!Number.isSafeInteger(replicas) || replicas < 0) throw invalidArgument('waitReplicas', `must be an integer >= 0, 0 = no WAIT (got ${String(replicas)})`);
  const timeoutMs = options.waitTimeoutMs ?? 1000;
  // WAIT with timeout 0 blocks forever.
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) throw invalidArgument('waitTimeoutMs', `must be an integer >= 1 (got ${String(timeoutMs)})`);
  return replicas > 0 ? { replicas, timeoutMs } : undefined;
}

/** The calls grouped by storage namespace, in order of first appearance. */
function byNamespace(calls: readonly number[][], storage: readonly string[]): number[][][] {
  const groups = new Map<string, number[][]>();
  for (const c of calls) {
    const ns = storage[c[0] as number] as string;
    let g = groups.get(ns);
    if (g === undefined) groups.set(ns, (g = []));
    g.push(c);
  }
  return [...groups.values()];
}

/** Groups task indexes by (storage namespace, type), in order of first appearance, cut to MAX_PER_CALL. */
function planCalls(tasks: readonly PreparedTask[], storage: readonly string[]): number[][] {
  const groups = new Map<string, number[]>();
  tasks.forEach((t, i) => {
    const id = (storage[i] as string) + '\u0000' + t.taskType;
    let g = groups.get(id);
    if (g === undefined) groups.set(id, (g = []));
    g.push(i);
  });
  const calls: number[][] = [];
  for (const g of groups.values()) {
    for (let s = 0; s < g.length; s += MAX_PER_CALL) calls.push(g.slice(s, s + MAX_PER_CALL));
  }
  return calls;
}

/** baton_v2_configure's flat [setting, integer, ...] reply. */
export function parseSettings(reply: unknown): NamespaceSettings {
  if (!Array.isArray(reply) || reply.length % 2 !== 0) throw new BatonError('internal', 'baton_v2_configure: expected setting/value pairs');
  const out: Partial<NamespaceSettings> = {};
  for (let i = 0; i < reply.length; i += 2) {
    const name = String(reply[i]);
    if (name in NAMESPACE_CONFIG) out[name as NamespaceSetting] = Number(reply[i + 1]);
  }
  for (const name of Object.keys(NAMESPACE_CONFIG) as NamespaceSetting[]) {
    if (out[name] === undefined) throw new BatonError('internal', `baton_v2_configure: no ${name} in the reply`);
  }
  return out as NamespaceSettings;
}

// The producer: enqueue tasks (now, delayed, at a time, idempotent by id or unique key), one or
// many per round trip; cancel them; read and change namespace settings.
import { BatonError, fromRedisError, invalidArgument } from './baton_error.js';
import { cancel as cancelCall, configure as configureCall, enqueue as enqueueCall } from './generated/calls.js';
import { commandOf } from './function_call.js';
import { GLOBAL_KEYS, NAMESPACE_CONFIG, type NamespaceSetting } from './generated/protocol.js';
import { keyOf } from './keys.js';
import { defaultRedisUrl, RedisLink, type LinkOptions } from './redis_link.js';
import { prepareDocument, prepareRequest, type EnqueueOptions, type PreparedTask, type TaskRequest } from './enqueue_request.js';
import { readEnqueueReply, type EnqueueResult } from './enqueue_reply.js';
import { checkName, checkTaskId } from './task_rules.js';
import type { TaskFields } from './task_document.js';
import { loadOtel, ProducerSpans } from './tracing.js';

/** Tasks per baton_v2_enqueue call (as the C++ client). */
const MAX_PER_CALL = 256;

export interface ClientOptions extends Omit<LinkOptions, 'name'> {
  /** "redis://[user:password@]host:port[/db]"; default BATON_REDIS_URL or redis://127.0.0.1:6379. */
  redis?: string;
  /**
   * OpenTelemetry (needs @opentelemetry/api): a PRODUCER span per task enqueued without a trace,
   * carried as trace.traceparent (default true).
   */
  tracing?: boolean;
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

  private constructor(link: RedisLink, tracing: boolean) {
    this.link = link;
    this.tracing = tracing;
  }

  /** Connects and checks the functions library version. */
  static async connect(options: ClientOptions = {}): Promise<Client> {
    const link = new RedisLink(options.redis ?? defaultRedisUrl(), { ...options, name: 'baton-client' });
    const client = new Client(link, options.tracing !== false);
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
   * not_found when there is no such live task, conflict when it is running or dead.
   */
  async cancel(namespace: string, taskId: string): Promise<void> {
    checkName('namespace', namespace);
    checkTaskId(taskId);
    const redis = await this.link.ready();
    let record: string | null;
    try {
      record = await redis.hget(keyOf('tasks', namespace), taskId);
    } catch (e) {
      throw fromRedisError(e, 'cancel');
    }
    if (record === null) throw new BatonError('not_found', `cancel: no live task ${taskId} in namespace ${namespace}`);
    const type = record.split('|')[1];
    if (type === undefined || type === '') throw new BatonError('internal', `cancel: malformed task record '${record}'`);
    const reply = await this.link.fcall(cancelCall(namespace, type, { id: taskId }), 'cancel');
    if (String(reply) !== 'cancelled') throw new BatonError('internal', `cancel: unexpected reply ${String(reply)}`);
  }

  /**
   * Changes settings of a namespace ("" = back to the default) and returns the effective
   * settings; with no changes it only reads them. Throws invalid_argument naming the setting.
   */
  async configure(namespace: string, changes: Partial<Record<NamespaceSetting, number | ''>> = {}): Promise<NamespaceSettings> {
    checkName('namespace', namespace);
    const items = Object.entries(changes).map(([setting, value]) => {
      if (!(setting in NAMESPACE_CONFIG)) throw invalidArgument(setting, 'is not a setting');
      return { setting, value: value === '' ? '' : String(value) };
    });
    const reply = await this.link.fcall(configureCall(namespace, items), 'configure');
    return parseSettings(reply);
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
    const pipeline = redis.pipeline();
    // baton:v2:namespaces is a plain directory for the CLI: one SADD per new namespace (again
    // after a reconnect: Redis may have restarted without its data).
    if (this.knownOn !== this.link.connections) {
      this.knownNamespaces.clear();
      this.knownOn = this.link.connections;
    }
    const fresh = [...new Set(tasks.map((t) => t.namespace))].filter((ns) => !this.knownNamespaces.has(ns));
    if (fresh.length > 0) pipeline.sadd(GLOBAL_KEYS.namespaces, ...fresh);
    const calls = planCalls(tasks);
    for (const c of calls) {
      const items = c.map((i) => (tasks[i] as PreparedTask).item);
      const uniques = c.map((i) => (tasks[i] as PreparedTask).uniqueKey).filter((k): k is string => k !== undefined);
      const first = tasks[c[0] as number] as PreparedTask;
      const [cmd, args] = commandOf(enqueueCall(first.namespace, first.taskType, items, uniques));
      pipeline.call(cmd, ...args);
    }
    const taskIds = tasks.map((t) => t.taskId);
    let replies: [Error | null, unknown][] | null;
    try {
      replies = await pipeline.exec();
    } catch (e) {
      throw new EnqueueError(fromRedisError(e, 'enqueue'), taskIds, new Array<EnqueueResult | undefined>(tasks.length).fill(undefined));
    }
    if (replies === null) throw new EnqueueError(new BatonError('unavailable', 'enqueue: pipeline aborted'), taskIds, new Array<EnqueueResult | undefined>(tasks.length).fill(undefined));
    let next = 0;
    if (fresh.length > 0) {
      if (replies[next]?.[0] == null) for (const ns of fresh) this.knownNamespaces.add(ns);
      next++;
    }
    const results = new Array<EnqueueResult | undefined>(tasks.length).fill(undefined);
    let firstError: BatonError | undefined;
    for (const c of calls) {
      const [err, reply] = replies[next++] ?? [new Error('missing reply'), null];
      if (err) {
        firstError ??= fromRedisError(err, 'enqueue');
        continue;
      }
      const ids = c.map((i) => (tasks[i] as PreparedTask).taskId);
      readEnqueueReply(reply, ids).forEach((r, k) => {
        results[c[k] as number] = r;
      });
    }
    if (firstError) throw new EnqueueError(firstError, taskIds, results);
    return results as EnqueueResult[];
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

/** Groups task indexes by (namespace, type), in order of first appearance, cut to MAX_PER_CALL. */
function planCalls(tasks: readonly PreparedTask[]): number[][] {
  const groups = new Map<string, number[]>();
  tasks.forEach((t, i) => {
    const id = t.namespace + '\u0000' + t.taskType;
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

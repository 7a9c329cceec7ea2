// What one enqueue asks for, checked against the contract before anything is sent: a request
// (namespace, type, payload, options) becomes the ten per-task values of baton_v2_enqueue.
import { invalidArgument } from './baton_error.js';
import type { EnqueueItem } from './generated/calls.js';
import { encodePayload, stringifyJson } from './payload.js';
import {
  CREATED_AT_RULE, DEFAULT_MAX_RETRY, DELAY_SECONDS_RULE, EXECUTION_TIMEOUT_RULE, MAX_RETRY_RULE, checkExtra,
  checkName, checkPayloadText, checkTaskId, readInteger,
} from './task_rules.js';
import type { TaskFields } from './task_document.js';
import type { TraceContext } from './task.js';
import { newTaskId } from './uuid7.js';

export interface EnqueueOptions {
  /** The task id; default a new UUIDv7. The same id enqueued again is a duplicate (idempotent). */
  taskId?: string;
  /** Retries after the first attempt, 0..25 (default 3). */
  maxRetry?: number;
  /** Seconds before the first run, 0..31536000 (default 0). */
  delaySeconds?: number;
  /**
   * Absolute first-run time (Date or Unix ms), instead of delaySeconds (giving both is an error);
   * the task's delay_seconds records the whole seconds from now to it, as in the other SDKs.
   */
  runAt?: Date | number;
  /** Limit of one attempt in seconds, 1..86400; past it the attempt fails as a timeout. */
  executionTimeout?: number;
  /** While a task holding this key is within uniqueTtlSeconds, another enqueue with it is refused. */
  uniqueKey?: string;
  /** Lifetime of the unique key, >= 1 s (required with uniqueKey). */
  uniqueTtlSeconds?: number;
  /** W3C trace context; default: the active OpenTelemetry span, if @opentelemetry/api is present. */
  trace?: TraceContext;
  /** String metadata (at most 64 fields of at most 1024 characters). */
  headers?: Record<string, string>;
  /** Other top-level fields of the task document; they travel untouched. */
  extra?: Record<string, unknown>;
}

/** One task to enqueue. `payload` is a JSON object value, or rawJson(text) to send text as is. */
export interface TaskRequest {
  namespace: string;
  taskType: string;
  payload: unknown;
  options?: EnqueueOptions;
}

/** A request checked and encoded: the group it belongs to and its ARGV values. */
export interface PreparedTask {
  readonly namespace: string;
  readonly taskType: string;
  readonly taskId: string;
  readonly item: EnqueueItem;
  readonly uniqueKey: string | undefined;
}

function isInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v);
}

function scheduling(taskId: string, ns: string, type: string, fields: Omit<EnqueueItem, 'runAtMs' | 'uniqueKey' | 'uniqueTtlS'>,
  options: Pick<EnqueueOptions, 'runAt' | 'uniqueKey' | 'uniqueTtlSeconds'>): PreparedTask {
  let runAtMs = 0;
  if (options.runAt !== undefined) {
    runAtMs = options.runAt instanceof Date ? options.runAt.getTime() : options.runAt;
    if (!isInt(runAtMs) || runAtMs <= 0) throw invalidArgument('run_at', 'must be a Date or Unix milliseconds after 1970-01-01T00:00:00Z');
  }
  const ttl = options.uniqueTtlSeconds ?? 0;
  if (!isInt(ttl) || ttl < 0) throw invalidArgument('unique_ttl', `must be a non-negative integer of seconds (got ${String(ttl)})`);
  let uniqueKey: string | undefined;
  if (options.uniqueKey !== undefined && options.uniqueKey !== '') {
    if (typeof options.uniqueKey !== 'string') throw invalidArgument('unique_key', 'must be a string');
    if (ttl < 1) throw invalidArgument('unique_ttl', `must be at least 1 second when unique_key is set (got ${ttl})`);
    uniqueKey = options.uniqueKey;
  }
  return {
    namespace: ns, taskType: type, taskId, uniqueKey,
    item: { ...fields, runAtMs, uniqueKey: uniqueKey ?? '', uniqueTtlS: uniqueKey ? ttl : 0 },
  };
}

/**
 * Checks a request in schema order (task_id, namespace, task_type, payload, max_retry,
 * delay_seconds, created_at, execution_timeout, extra) and encodes it. `createdAt` is Unix s.
 * `traceFor` gives the trace context of a request that has none (e.g. its producer span's).
 * Throws invalid_argument.
 */
export function prepareRequest(request: TaskRequest, createdAt: number,
  traceFor?: (namespace: string, taskType: string, taskId: string) => TraceContext | undefined): PreparedTask {
  const o = request.options ?? {};
  const taskId = checkTaskId(o.taskId ?? newTaskId());
  const ns = checkName('namespace', request.namespace);
  const type = checkName('task_type', request.taskType);
  const payload = encodePayload(request.payload);
  const maxRetry = readInteger(MAX_RETRY_RULE, o.maxRetry ?? DEFAULT_MAX_RETRY);
  let delaySeconds = readInteger(DELAY_SECONDS_RULE, o.delaySeconds ?? 0);
  if (o.runAt !== undefined) {
    if (delaySeconds !== 0) throw invalidArgument('run_at', 'cannot be combined with delaySeconds (give one of them)');
    const at = o.runAt instanceof Date ? o.runAt.getTime() : o.runAt;
    if (isInt(at)) {
      delaySeconds = Math.max(0, Math.round((at - Date.now()) / 1000));
      if (delaySeconds > DELAY_SECONDS_RULE.max) {
        throw invalidArgument('run_at', `must be at most ${DELAY_SECONDS_RULE.max} s (365 days) ahead, the limit of delay_seconds (got ${delaySeconds} s ahead)`);
      }
    }
  }
  readInteger(CREATED_AT_RULE, createdAt);
  const timeout = o.executionTimeout === undefined ? '' : readInteger(EXECUTION_TIMEOUT_RULE, o.executionTimeout);
  const extra: Record<string, unknown> = { ...(o.extra ?? {}) };
  if (o.trace !== undefined) {
    extra.trace = o.trace;
  } else if (traceFor !== undefined && extra.trace === undefined) {
    const trace = traceFor(ns, type, taskId);
    if (trace !== undefined) extra.trace = trace;
  }
  if (o.headers !== undefined) extra.headers = o.headers;
  checkExtra(extra);
  const extraText = Object.keys(extra).length === 0 ? '' : stringifyJson(extra);
  return scheduling(taskId, ns, type, {
    id: taskId, payload, maxRetry, delaySeconds, createdAt, executionTimeout: timeout, extra: extraText,
  }, o);
}

/** A whole task document (e.g. from parseTaskDocument), enqueued exactly as it is. */
export function prepareDocument(task: TaskFields, options: Pick<EnqueueOptions, 'runAt' | 'uniqueKey' | 'uniqueTtlSeconds'> = {}): PreparedTask {
  checkTaskId(task.taskId);
  checkName('namespace', task.namespace);
  checkName('task_type', task.taskType);
  checkPayloadText(task.payloadText);
  readInteger(MAX_RETRY_RULE, task.maxRetry);
  readInteger(DELAY_SECONDS_RULE, task.delaySeconds);
  readInteger(CREATED_AT_RULE, task.createdAt);
  if (task.executionTimeout !== undefined) readInteger(EXECUTION_TIMEOUT_RULE, task.executionTimeout);
  checkExtra(task.extra);
  const extraText = Object.keys(task.extra).length === 0 ? '' : stringifyJson(task.extra);
  return scheduling(task.taskId, task.namespace, task.taskType, {
    id: task.taskId, payload: task.payloadText, maxRetry: task.maxRetry, delaySeconds: task.delaySeconds,
    createdAt: task.createdAt, executionTimeout: task.executionTimeout ?? '', extra: extraText,
  }, options);
}

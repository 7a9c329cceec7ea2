/**
 * Baton for Node.js: a producer (Client) and a worker (Worker) for Baton's task queues on Redis
 * Streams, speaking the baton_v2 Redis Functions library (docs/protocol.md) like every other
 * Baton SDK, so tasks flow between Node, C++, Python, Go and Java.
 *
 * @packageDocumentation
 */
export { Client, EnqueueError, type ClientOptions, type NamespaceSettings } from './client.js';
export type { EnqueueOptions, TaskRequest } from './enqueue_request.js';
export type {
  EnqueueResult, EnqueueStatus, QueuedResult, ScheduledResult, DuplicateResult, UniqueConflictResult,
} from './enqueue_reply.js';
export {
  Worker, type WorkerOptions, type TypeOptions, type ThreadedTypeOptions, type WorkerStats, type TypeStats,
  type Handler, type TaskContext, type FailedAttempt, type StrayError,
} from './worker.js';
export { Task, type PayloadParse, type TraceContext } from './task.js';
export type { ThreadTask } from './thread_pool.js';
export { NonRetryableError, type FailureKind } from './attempt.js';
export type { BlockReport, LagOptions } from './lag_monitor.js';
export type { RetryPolicy } from './backoff.js';
export { type Logger, consoleLogger, silentLogger } from './logger.js';
export { BatonError, type ErrorCode } from './baton_error.js';
export { rawJson, parseLossless, stringifyJson, hasUnsafeNumbers, LosslessNumber, isLosslessNumber, type RawJson } from './payload.js';
export { parseTaskDocument, taskDocumentText, type TaskFields } from './task_document.js';
export { newTaskId, isUuidV7 } from './uuid7.js';
export { isValidName, isValidTaskId, MAX_PAYLOAD_BYTES } from './task_rules.js';
export { parseTraceparent, formatTraceparent } from './tracing.js';
export { LIBRARY, VERSION as PROTOCOL_VERSION, NAMESPACE_CONFIG, type NamespaceSetting } from './generated/protocol.js';

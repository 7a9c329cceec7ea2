// Task documents (contract/task.schema.json) as JSON text: parse and validate one, or write one.
// The payload keeps its exact text both ways; the document is parsed losslessly, so that an
// out-of-range integer is reported with the digits its producer wrote.
import { parse, stringify } from 'lossless-json';
import { BatonError, invalidArgument } from './baton_error.js';
import { findTopLevelMember } from './json_span.js';
import {
  CREATED_AT_RULE, DELAY_SECONDS_RULE, EXECUTION_TIMEOUT_RULE, MAX_RETRY_RULE, checkExtra, checkName,
  checkPayloadSize, checkTaskId, isTaskField, jsonTypeName, readInteger,
} from './task_rules.js';

/** The fields of one task, with the contract's names in camelCase. */
export interface TaskFields {
  readonly taskId: string;
  readonly namespace: string;
  readonly taskType: string;
  /** The payload, JSON object text, exactly as its producer wrote it. */
  readonly payloadText: string;
  readonly maxRetry: number;
  readonly delaySeconds: number;
  /** Unix seconds. */
  readonly createdAt: number;
  /** Seconds, or undefined when the task has no limit. */
  readonly executionTimeout: number | undefined;
  /** Every other top-level field (trace, headers, fields of newer producers), untouched. */
  readonly extra: Readonly<Record<string, unknown>>;
}

function member(doc: Record<string, unknown>, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(doc, key) ? doc[key] : undefined;
}

function required(doc: Record<string, unknown>, field: string): unknown {
  const v = member(doc, field);
  if (v === undefined) throw invalidArgument(field, 'required');
  return v;
}

/**
 * Parses and validates a task document. Throws BatonError invalid_argument naming the first
 * broken field in schema order: "max_retry: must be an integer 0..25 (got 99)",
 * "task_id: required", "document: not valid JSON: <parser message>".
 */
export function parseTaskDocument(text: string): TaskFields {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (e) {
    throw invalidArgument('document', `not valid JSON: ${(e as Error).message}`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc) || jsonTypeName(doc) !== 'object') {
    throw invalidArgument('document', `must be a JSON object (got ${jsonTypeName(doc)})`);
  }
  const d = doc as Record<string, unknown>;
  const taskId = checkTaskId(required(d, 'task_id'));
  const namespace = checkName('namespace', required(d, 'namespace'));
  const taskType = checkName('task_type', required(d, 'task_type'));
  const payload = required(d, 'payload');
  if (jsonTypeName(payload) !== 'object') {
    throw invalidArgument('payload', `must be a JSON object (got ${jsonTypeName(payload)})`);
  }
  const payloadText = findTopLevelMember(text, 'payload');
  if (payloadText === undefined) throw new BatonError('internal', 'payload: parsed but not found in the text');
  checkPayloadSize(Buffer.byteLength(payloadText, 'utf8'));
  const maxRetry = readInteger(MAX_RETRY_RULE, required(d, 'max_retry'));
  const delaySeconds = readInteger(DELAY_SECONDS_RULE, required(d, 'delay_seconds'));
  const createdAt = readInteger(CREATED_AT_RULE, required(d, 'created_at'));
  const timeout = member(d, 'execution_timeout');
  const executionTimeout = timeout === undefined ? undefined : readInteger(EXECUTION_TIMEOUT_RULE, timeout);
  const extra: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(d)) if (!isTaskField(k)) extra[k] = v;
  checkExtra(extra);
  return { taskId, namespace, taskType, payloadText, maxRetry, delaySeconds, createdAt, executionTimeout, extra };
}

/** The compact task document: contract fields first, then the extra fields; payload verbatim. */
export function taskDocumentText(task: TaskFields): string {
  let out = `{"task_id":${JSON.stringify(task.taskId)},"namespace":${JSON.stringify(task.namespace)}` +
    `,"task_type":${JSON.stringify(task.taskType)},"payload":${task.payloadText}` +
    `,"max_retry":${task.maxRetry},"delay_seconds":${task.delaySeconds},"created_at":${task.createdAt}`;
  if (task.executionTimeout !== undefined) out += `,"execution_timeout":${task.executionTimeout}`;
  for (const [k, v] of Object.entries(task.extra)) {
    if (isTaskField(k)) continue;
    out += `,${JSON.stringify(k)}:${stringify(v) ?? 'null'}`;
  }
  return out + '}';
}

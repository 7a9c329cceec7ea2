// The task a handler receives: the contract fields, the attempt, and the payload as delivered
// (bytes, text) with a parsed value. Built from one entry of baton_v2_dequeue by decodeEntry,
// which applies every rule of the contract: the entry may come from a producer in any language.
import { BatonError } from './baton_error.js';
import { parseLossless } from './payload.js';
import {
  CREATED_AT_RULE, DELAY_SECONDS_RULE, EXECUTION_TIMEOUT_RULE, MAX_RETRY_RULE, checkExtra, checkName,
  checkPayloadSize, checkTaskId, jsonTypeName, parseIntegerText, textTypeName, type IntegerRule,
} from './task_rules.js';
import { taskDocumentText, type TaskFields } from './task_document.js';

/**
 * How `Task.payload` is parsed. "json": JSON.parse (numbers beyond 2^53 lose digits). "lossless":
 * parseLossless (big integers as bigint, other unsafe numbers as LosslessNumber).
 */
export type PayloadParse = 'json' | 'lossless';

/** W3C trace context carried in the task's `trace` field. */
export interface TraceContext {
  readonly traceparent?: string;
  readonly tracestate?: string;
}

export class Task<P = unknown> implements TaskFields {
  readonly taskId: string;
  readonly namespace: string;
  readonly taskType: string;
  readonly maxRetry: number;
  readonly delaySeconds: number;
  readonly createdAt: number;
  readonly executionTimeout: number | undefined;
  readonly extra: Readonly<Record<string, unknown>>;
  /** 1 on the first run, 2 on the first retry, ... */
  readonly attempt: number;
  /** The stream entry this attempt was delivered from. */
  readonly streamId: string;
  /** The payload bytes exactly as the producer wrote them. */
  readonly payloadBytes: Buffer;
  readonly #payloadText: string;
  readonly #payload: P;

  /** @internal Use decodeEntry; handlers receive ready Tasks. */
  constructor(fields: TaskFields & { attempt: number; streamId: string; payloadBytes: Buffer; payload: P }) {
    this.taskId = fields.taskId;
    this.namespace = fields.namespace;
    this.taskType = fields.taskType;
    this.maxRetry = fields.maxRetry;
    this.delaySeconds = fields.delaySeconds;
    this.createdAt = fields.createdAt;
    this.executionTimeout = fields.executionTimeout;
    this.extra = fields.extra;
    this.attempt = fields.attempt;
    this.streamId = fields.streamId;
    this.payloadBytes = fields.payloadBytes;
    this.#payloadText = fields.payloadText;
    this.#payload = fields.payload;
  }

  /** The payload as text (UTF-8 of payloadBytes). */
  get payloadText(): string {
    return this.#payloadText;
  }

  /** The parsed payload (JSON.parse, or parseLossless when the worker's payloadParse is "lossless"). */
  get payload(): P {
    return this.#payload;
  }

  /** The payload parsed without losing a digit (see parseLossless), whatever the worker's setting. */
  payloadLossless(): unknown {
    return parseLossless(this.#payloadText);
  }

  /** The W3C trace context the producer attached, if any. */
  get trace(): TraceContext | undefined {
    return this.extra.trace as TraceContext | undefined;
  }

  /** The string headers the producer attached, if any. */
  get headers(): Readonly<Record<string, string>> | undefined {
    return this.extra.headers as Record<string, string> | undefined;
  }

  /** The task document (contract/task.schema.json), payload verbatim. */
  toDocument(): string {
    return taskDocumentText(this);
  }
}

/** Values per delivered task in baton_v2_dequeue's entries. */
export const ENTRY_VALUES = 9;
const ATTEMPT_RULE: IntegerRule = { field: 'attempt', wording: 'must be an integer', min: 0, max: 2147483646 };

/** A delivered entry that is not a valid task: fail it with kind malformed and this reason. */
export class MalformedEntry extends Error {
  constructor(readonly streamId: string, readonly taskId: string, readonly reason: BatonError) {
    super(reason.message);
    this.name = 'MalformedEntry';
  }
}

const text = (b: Buffer | undefined): string => (b === undefined ? '' : b.toString('utf8'));

/**
 * The Task of entry `index` of a dequeue reply's flat `entries` (9 Buffers per task: SID, id,
 * payload, max_retry, delay_seconds, created_at, execution_timeout, extra, attempt). Throws
 * MalformedEntry (never anything else) when the entry breaks a rule of the contract.
 */
export function decodeEntry<P>(ns: string, type: string, entries: readonly Buffer[], index: number, parse: PayloadParse): Task<P> {
  const base = index * ENTRY_VALUES;
  const streamId = text(entries[base]);
  const taskId = text(entries[base + 1]);
  try {
    checkTaskId(taskId);
    checkName('namespace', ns);
    checkName('task_type', type);
    const payloadBytes = entries[base + 2] ?? Buffer.alloc(0);
    checkPayloadSize(payloadBytes.length);
    const payloadText = payloadBytes.toString('utf8');
    if (textTypeName(payloadText) !== 'object') {
      throw new BatonError('invalid_argument', `payload: must be a JSON object (got ${textTypeName(payloadText)})`, { field: 'payload' });
    }
    let payload: unknown;
    try {
      payload = parse === 'lossless' ? parseLossless(payloadText) : JSON.parse(payloadText);
    } catch (e) {
      throw new BatonError('invalid_argument', `payload: not valid JSON: ${(e as Error).message}`, { field: 'payload' });
    }
    const maxRetry = parseIntegerText(MAX_RETRY_RULE, text(entries[base + 3]));
    const delaySeconds = parseIntegerText(DELAY_SECONDS_RULE, text(entries[base + 4]));
    const createdAt = parseIntegerText(CREATED_AT_RULE, text(entries[base + 5]));
    const timeoutText = text(entries[base + 6]);
    const executionTimeout = timeoutText === '' ? undefined : parseIntegerText(EXECUTION_TIMEOUT_RULE, timeoutText);
    const extraText = text(entries[base + 7]);
    let extra: Record<string, unknown> = {};
    if (extraText !== '') {
      let parsed: unknown;
      try {
        parsed = parseLossless(extraText);
      } catch {
        throw new BatonError('invalid_argument', 'extra: not valid JSON', { field: 'extra' });
      }
      if (jsonTypeName(parsed) !== 'object') {
        throw new BatonError('invalid_argument', `extra: must be a JSON object (got ${jsonTypeName(parsed)})`, { field: 'extra' });
      }
      extra = checkExtra(parsed);
    }
    const attempt = parseIntegerText(ATTEMPT_RULE, text(entries[base + 8])) + 1;
    return new Task<P>({
      taskId, namespace: ns, taskType: type, payloadText, maxRetry, delaySeconds, createdAt, executionTimeout,
      extra, attempt, streamId, payloadBytes, payload: payload as P,
    });
  } catch (e) {
    const reason = e instanceof BatonError ? e : new BatonError('internal', String(e));
    throw new MalformedEntry(streamId, taskId, reason);
  }
}
